/* global TextEncoder, TextDecoder, atob, btoa, crypto */
// The checks of the auditors' page, in the browser with WebCrypto alone: verifier keys
// and signed notes (C2SP), checkpoints, Log-Receipts, and the RFC 9162 inclusion and
// consistency proofs. The service is asked for data only, never for a verdict.

const utf8 = new TextEncoder();

export const fromBase64 = (text) => Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
export const toBase64 = (bytes) => btoa(String.fromCharCode(...bytes));
export const toHex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
const fromHex = (text) => Uint8Array.from(text.match(/../g) ?? [], (h) => parseInt(h, 16));
const same = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);

async function sha256(...parts) {
  const all = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  parts.reduce((at, p) => (all.set(p, at), at + p.length), 0);
  return new Uint8Array(await crypto.subtle.digest('SHA-256', all));
}
const node = (left, right) => sha256(Uint8Array.of(1), left, right);

/** A verifier key NAME+HASH+base64(0x01 || Ed25519 public key), its hash checked. */
export async function parseVerifierKey(text) {
  const m = /^([^+\s]+)\+([0-9a-f]{8})\+([A-Za-z0-9+/]+={0,2})$/.exec(text.trim());
  if (!m) throw new Error('a verifier key is NAME+HASH+KEY (8 hex digits, then base64)');
  const raw = fromBase64(m[3]);
  if (raw.length !== 33 || raw[0] !== 1) throw new Error('not an Ed25519 verifier key (0x01 then 32 bytes)');
  if (toHex((await sha256(utf8.encode(`${m[1]}\n`), raw)).subarray(0, 4)) !== m[2]) {
    throw new Error("the verifier key's hash does not match its name and key");
  }
  const key = await crypto.subtle.importKey('raw', raw.subarray(1), { name: 'Ed25519' }, false, ['verify']);
  return { text: text.trim(), name: m[1], keyHash: m[2], key };
}

/**
 * A signed note: its text and signature lines, each checked against the verifiers.
 * signedBy is a verifier whose signature holds (undefined when none of them signed it);
 * wrong names one whose signature does not hold.
 */
async function openNote(note, verifiers) {
  const cut = note.lastIndexOf('\n\n');
  if (cut < 0 || !note.endsWith('\n')) throw new Error('not a signed note (text, an empty line, signature lines)');
  const text = note.slice(0, cut + 1);
  const signers = [];
  let signedBy;
  let wrong;
  for (const line of note.slice(cut + 2, -1).split('\n')) {
    const m = /^\u2014 (\S+) ([A-Za-z0-9+/]+={0,2})$/.exec(line);
    if (!m) throw new Error('a malformed signature line');
    const bytes = fromBase64(m[2]);
    const signer = { name: m[1], keyHash: toHex(bytes.subarray(0, 4)) };
    signers.push(signer);
    const known = verifiers.find((v) => v.name === signer.name && v.keyHash === signer.keyHash);
    if (!known) continue;
    if (await crypto.subtle.verify({ name: 'Ed25519' }, known.key, bytes.subarray(4), utf8.encode(text))) signedBy = known;
    else wrong = known;
  }
  return { text, signers, signedBy, wrong };
}

/**
 * A checkpoint (a signed note): its signature lines checked against the pinned verifiers.
 * signedBy is the pinned verifier whose signature holds, undefined when no pinned key
 * signed it; a pinned key's signature that does not hold is an error.
 */
export async function openCheckpoint(note, verifiers) {
  const { text, signers, signedBy, wrong } = await openNote(note, verifiers);
  if (wrong) throw new Error(`a wrong signature by the pinned key ${wrong.keyHash}`);
  const m = /^(petstore-inventory\/[0-9a-f-]{36})\n(0|[1-9]\d{0,15})\n([A-Za-z0-9+/]{43}=)\n/.exec(text);
  if (!m) throw new Error('not a checkpoint: its origin, size and root lines');
  const time = /^time (\S+)$/m.exec(text)?.[1];
  return { note, origin: m[1], size: Number(m[2]), root: fromBase64(m[3]), time, signers, signedBy };
}

const ENDORSEMENT = /^petstore-inventory\/key-endorsement\/v1\n([0-9a-f-]{36})\n(\S+)\ntime (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)\n$/;
/** How far a signed time may be outside its key's time in the key log (the clock margin). */
const KEY_TIME_MARGIN_MS = 5_000;
const withinKeyTime = (time, key) =>
  Date.parse(time) >= Date.parse(key.addedAt) - KEY_TIME_MARGIN_MS &&
  (key.retiredAt === null || Date.parse(time) <= Date.parse(key.retiredAt) + KEY_TIME_MARGIN_MS);

/**
 * Which keys the log lists (GET /v1/log/signing-keys) are trusted: the pinned ones and,
 * transitively, each whose endorsement a trusted key signed for this log (logId), naming
 * that key, within the endorser's time. endorsed: each key trusted so, with its endorser's
 * verifier key; untrusted: every other key the log lists.
 */
export async function trustChain(pinned, listed, logId) {
  const trusted = [...pinned];
  const endorsed = [];
  const isTrusted = (key) => trusted.some((v) => v.text === key.verifierKey);
  for (let grew = true; grew;) {
    grew = false;
    for (const key of listed) {
      if (isTrusted(key) || key.endorsedBy === null) continue;
      // An endorsement that is no signed note endorses nothing: the key stays untrusted.
      const note = await openNote(key.endorsedBy, trusted).catch(() => ({}));
      const m = note.signedBy && !note.wrong ? ENDORSEMENT.exec(note.text) : null;
      if (!m || m[1] !== logId || m[2] !== key.verifierKey) continue;
      const endorser = listed.find((k) => k.verifierKey === note.signedBy.text);
      if (endorser && !withinKeyTime(m[3], endorser)) continue;
      trusted.push(await parseVerifierKey(key.verifierKey));
      endorsed.push({ key, by: note.signedBy.text });
      grew = true;
    }
  }
  return { trusted, endorsed, untrusted: listed.filter((key) => !isTrusted(key)) };
}

/** The Log-Receipt's parts (version 2), or an Error saying why it is not one. */
export function parseReceipt(text) {
  const value = text.trim().replace(/^Log-Receipt:\s*/i, '');
  const m =
    /^v=2, log="([0-9a-f-]{36})", seq=([1-9]\d{0,15}), hash="([0-9a-f]{64})", checkpoint=:([A-Za-z0-9+/]+={0,2}):, proof=\(([^)]*)\)$/.exec(
      value,
    );
  if (!m) throw new Error('not a version 2 Log-Receipt: v=2, log="…", seq=…, hash="…", checkpoint=:…:, proof=(…)');
  const proof =
    m[5] === ''
      ? []
      : m[5].split(' ').map((item) => {
          if (!/^:[A-Za-z0-9+/]{43}=:$/.test(item))
            throw new Error(`a proof item is not a base64 hash between colons: ${item.slice(0, 60)}`);
          return fromBase64(item.slice(1, -1));
        });
  return { log: m[1], seq: Number(m[2]), hash: fromHex(m[3]), note: new TextDecoder().decode(fromBase64(m[4])), proof };
}

/** RFC 9162 2.1.3.2: the root the path leads to from leaf `index` of a tree of `size`,
 * with each step (the sibling and the side it is on), or a reason it leads nowhere. */
export async function inclusionPath(index, size, eventHash, proof) {
  const leaf = await sha256(Uint8Array.of(0), eventHash);
  const steps = [];
  let [fn, sn, r] = [index, size - 1, leaf];
  for (const p of proof) {
    if (sn === 0) return { leaf, steps, failure: 'the path is longer than the tree is high' };
    if (fn % 2 === 1 || fn === sn) {
      r = await node(p, r);
      steps.push({ sibling: p, side: 'left', hash: r });
      while (fn % 2 === 0 && fn !== 0) [fn, sn] = [fn >> 1, sn >> 1];
    } else {
      r = await node(r, p);
      steps.push({ sibling: p, side: 'right', hash: r });
    }
    [fn, sn] = [fn >> 1, sn >> 1];
  }
  if (sn !== 0) return { leaf, steps, failure: 'the path ends below the root' };
  return { leaf, steps, root: r };
}

/** RFC 9162 2.1.4.2: whether the tree of `first` leaves is a prefix of the tree of `second`. */
export async function consistent(first, second, firstRoot, secondRoot, proof) {
  if (first === second) return proof.length === 0 && same(firstRoot, secondRoot);
  const path = (first & (first - 1)) === 0 ? [firstRoot, ...proof] : proof;
  if (path.length === 0) return false;
  let [fn, sn] = [first - 1, second - 1];
  while (fn % 2 === 1) [fn, sn] = [fn >> 1, sn >> 1];
  let [fr, sr] = [path[0], path[0]];
  for (const c of path.slice(1)) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      [fr, sr] = [await node(c, fr), await node(c, sr)];
      while (fn % 2 === 0 && fn !== 0) [fn, sn] = [fn >> 1, sn >> 1];
    } else sr = await node(sr, c);
    [fn, sn] = [fn >> 1, sn >> 1];
  }
  return sn === 0 && same(fr, firstRoot) && same(sr, secondRoot);
}

/**
 * Whether the newest checkpoint extends an older one: fetchProof(from, to) gives the
 * consistency proof's hashes. Returns undefined when it does, else what is wrong.
 */
export async function extendsCheckpoint(older, newest, fetchProof) {
  if (older.origin !== newest.origin) return `a checkpoint of another log (${older.origin})`;
  if (older.size > newest.size) return `the log shrank from ${older.size} to ${newest.size} events`;
  if (older.size === 0) return undefined;
  const proof = older.size === newest.size ? [] : await fetchProof(older.size, newest.size);
  if (await consistent(older.size, newest.size, older.root, newest.root, proof)) return undefined;
  return older.size === newest.size
    ? `two trees of ${newest.size} events differ`
    : `the tree of ${newest.size} events does not extend the tree of ${older.size}`;
}

/**
 * A receipt's checks in order, each { step, ok, detail }; the first that fails ends them.
 * newest is the newest checkpoint, already verified against the pinned keys.
 */
export async function checkReceipt(text, { verifiers, newest, fetchProof }) {
  const results = [];
  const done = (step, ok, detail, more = {}) => (results.push({ step, ok, detail, ...more }), ok);
  let receipt;
  try {
    receipt = parseReceipt(text);
  } catch (error) {
    done('format', false, error.message);
    return { results };
  }
  done('format', true, `event ${receipt.seq} of log ${receipt.log}`);
  let checkpoint;
  try {
    checkpoint = await openCheckpoint(receipt.note, verifiers);
  } catch (error) {
    done('signature', false, `the receipt's checkpoint: ${error.message}`);
    return { results, receipt };
  }
  if (checkpoint.origin !== `petstore-inventory/${receipt.log}`) {
    done('signature', false, `the receipt's checkpoint is of another log (${checkpoint.origin})`);
    return { results, receipt };
  }
  if (!checkpoint.signedBy) {
    const by = checkpoint.signers.map((s) => `${s.name}+${s.keyHash}`).join(', ');
    done('signature', false, `the receipt's checkpoint is signed by no pinned key (signed by ${by || 'nobody'})`);
    return { results, receipt };
  }
  done('signature', true, `its checkpoint of ${checkpoint.size} events is signed by the pinned key ${checkpoint.signedBy.keyHash}`);
  const path =
    receipt.seq > checkpoint.size
      ? { steps: [], failure: `seq ${receipt.seq} is past the checkpoint's ${checkpoint.size} events` }
      : await inclusionPath(receipt.seq - 1, checkpoint.size, receipt.hash, receipt.proof);
  const included = path.failure === undefined && same(path.root, checkpoint.root);
  const why = path.failure ?? 'the path leads to another root than the checkpoint signed';
  if (
    !done('inclusion', included, included ? `the event's leaf leads up ${path.steps.length} levels to the signed root` : why, {
      path,
      checkpoint,
    })
  ) {
    return { results, receipt };
  }
  const broken = await extendsCheckpoint(checkpoint, newest, fetchProof);
  done(
    'consistency',
    broken === undefined,
    broken ?? `the newest checkpoint (${newest.size} events) extends the receipt's tree of ${checkpoint.size}`,
  );
  return { results, receipt };
}
