// Signed heads and receipts: checked here as an outsider would, with Node's crypto alone
// (a public key made from the published raw bytes, the message built from the
// documented lines), never with the project's signing code. Both stores; SQLite signs on
// its writer thread, as the service runs it.
import { spawn, spawnSync } from 'node:child_process';
import { createHash, createPublicKey, generateKeyPairSync, verify } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { appliedEntry, makeCommandHandler } from '../../src/application/write/commands.ts';
import { ConfigError, readConfig } from '../../src/config.ts';
import { loadSigningKey } from '../../src/support/signing.ts';
import type { TestApp } from '../kit/app.ts';
import { openStore } from '../kit/stores.ts';
import { runScript } from '../kit/scripts.ts';
import { appSuite } from '../kit/suites.ts';
import { blocks, pageText, SIGNED } from '../kit/auditors-guide.ts';
import { needing, tools } from '../kit/tools.ts';
import { tempDir } from '../kit/paths.ts';
import { startService } from '../kit/service.ts';
import { endorse } from '../kit/signing-keys.ts';

const pemOf = () => generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
const KEY = { pem: pemOf() };

/** The raw public key of a PEM private key, base64url, by JWK export. */
const rawOf = (pem: string) => createPublicKey(pem).export({ format: 'jwk' }).x!;
const idOf = (raw: string) => createHash('sha256').update(Buffer.from(raw, 'base64url')).digest('hex').slice(0, 16);
const checks = (publicKey: string, lines: string[], signature: Buffer) =>
  verify(
    null,
    Buffer.from(lines.join('\n'), 'utf8'),
    createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: publicKey }, format: 'jwk' }),
    signature,
  );

interface Head {
  logId: string;
  seq: number;
  hash: string;
  keys: { seq: number; hash: string };
  time: string;
  signature: { keyId: string; value: string };
}
interface PublishedKey {
  keyId: string;
  publicKey: string;
  addedAt: string;
  verifierKey: string;
  retiredAt: string | null;
  endorsedBy: string | null;
}
const headLines = (h: Head) => ['petstore-inventory/head/v1', h.logId, String(h.seq), h.hash, String(h.keys.seq), h.keys.hash, h.time];

/** A version-2 Log-Receipt's members, read as the decisions describe them. */
function receiptOf(header: string | string[] | undefined) {
  const m = /^v=2, log="([^"]+)", seq=(\d+), hash="([0-9a-f]{64})", checkpoint=:([A-Za-z0-9+/]+={0,2}):, proof=\(([^)]*)\)$/.exec(
    String(header),
  );
  assert.ok(m, `a Log-Receipt: ${String(header)}`);
  const note = Buffer.from(m[4]!, 'base64').toString('utf8');
  const proof = m[5] === '' ? [] : m[5]!.split(' ').map((h) => Buffer.from(h.replace(/^:|:$/g, ''), 'base64'));
  return { log: m[1]!, seq: m[2]!, hash: m[3]!, note, proof };
}

const sha256 = (...parts: Buffer[]) => createHash('sha256').update(Buffer.concat(parts)).digest();

/**
 * Whether a receipt is sound with Node's crypto alone: its checkpoint is a signed note by
 * publicKey (base64url raw) under the log's name, and the inclusion path (RFC 9162) leads
 * from the event's leaf to the checkpoint's root. Returns the checkpoint's size, or why not.
 */
function checkReceipt(r: ReturnType<typeof receiptOf>, publicKey: string): number | string {
  const split = r.note.lastIndexOf('\n\n');
  const text = r.note.slice(0, split + 1);
  const [origin, size, root] = text.split('\n');
  if (origin !== `petstore-inventory/${r.log}`) return `origin ${origin}`;
  const sig = /^\u2014 (\S+) (\S+)\n$/.exec(r.note.slice(split + 2));
  if (!sig || sig[1] !== origin) return 'no signature line by the log';
  const bytes = Buffer.from(sig[2]!, 'base64');
  const raw = Buffer.from(publicKey, 'base64url');
  if (!bytes.subarray(0, 4).equals(sha256(Buffer.from(`${origin}\n`), Buffer.from([1]), raw).subarray(0, 4))) return 'another key hash';
  const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: publicKey }, format: 'jwk' });
  if (!verify(null, Buffer.from(text, 'utf8'), key, bytes.subarray(4))) return 'wrong signature';
  let fn = Number(r.seq) - 1;
  let sn = Number(size) - 1;
  let hash = sha256(Buffer.from([0]), Buffer.from(r.hash, 'hex'));
  for (const p of r.proof) {
    if (sn === 0) return 'path too long';
    if (fn % 2 === 1 || fn === sn) {
      hash = sha256(Buffer.from([1]), p, hash);
      while (fn % 2 === 0 && fn !== 0) [fn, sn] = [fn >> 1, sn >> 1];
    } else hash = sha256(Buffer.from([1]), hash, p);
    [fn, sn] = [fn >> 1, sn >> 1];
  }
  if (sn !== 0 || hash.toString('base64') !== root) return 'the path does not lead to the root';
  return Number(size);
}

const json = async <T>(t: TestApp, path: string) => JSON.parse((await t.get(path)).text) as T;
const hashOf = async (t: TestApp, seq: bigint) => (await t.store.eventsAfter(seq - 1n, 1))[0]![9];

const signed = appSuite('signed heads and receipts', { app: { signingKey: KEY, writer: 'thread' } });

signed('GET /v1/log/signing-keys lists the key; the head verifies with it from the documented message', async ({ t }) => {
  const keys = await json<PublishedKey[]>(t, '/v1/log/signing-keys');
  assert.equal(
    keys.map((k) => [k.keyId, k.publicKey]),
    [[idOf(rawOf(KEY.pem)), rawOf(KEY.pem)]],
  );
  await t.track(7, 3);
  assert.is((await t.patch(7, { quantity: 5 })).status, 200);
  const head = await json<Head>(t, '/v1/log/head');
  assert.match(head.logId, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.is(head.seq, 2);
  assert.is(head.signature.keyId, keys[0]!.keyId);
  const signature = Buffer.from(head.signature.value, 'base64url');
  assert.ok(checks(keys[0]!.publicKey, headLines(head), signature), 'the head verifies');
  assert.not.ok(checks(keys[0]!.publicKey, headLines({ ...head, seq: 1 }), signature), 'another seq does not');
  // The key log holds the signing key (SigningKeyAdded) and the tester's key.
  assert.is(head.keys.seq, 2);
  const unauthenticated = await t.request({ path: '/v1/log/signing-keys' });
  assert.is(unauthenticated.status, 401);
});

signed('every 200 PATCH carries a receipt for its event, verified with the published key', async ({ t }) => {
  await t.track(7, 3);
  const { logId } = await json<Head>(t, '/v1/log/head');
  const { publicKey, keyId } = (await json<PublishedKey[]>(t, '/v1/log/signing-keys'))[0]!;
  for (const quantity of [5, 6]) {
    const res = await t.patch(7, { quantity });
    assert.is(res.status, 200);
    const r = receiptOf(res.headers['log-receipt']);
    const newest = (await t.events()).at(-1)!;
    assert.equal([r.log, r.seq, r.hash], [logId, String(newest.seq), await hashOf(t, newest.seq)]);
    assert.is(checkReceipt(r, publicKey), Number(newest.seq), 'the receipt verifies');
    assert.type(checkReceipt({ ...r, seq: '1' }, publicKey), 'string', 'not for another seq');
    assert.type(
      checkReceipt({ ...r, hash: r.hash.replace(/^./, (c) => (c === '0' ? '1' : '0')) }, publicKey),
      'string',
      'nor another hash',
    );
    assert.type(
      checkReceipt({ ...r, note: r.note.replace(`\n${r.seq}\n`, `\n${Number(r.seq) + 1}\n`) }, publicKey),
      'string',
      'nor another size',
    );
    assert.ok(keyId);
  }
  // A refusal wrote nothing: no receipt.
  const refused = await t.patch(8, { quantity: 1 });
  assert.is(refused.status, 404);
  assert.is(refused.headers['log-receipt'], undefined);
});

signed('a replay carries the receipt of the original write, not of the newest event', async ({ t }) => {
  await t.track(7, 3);
  const first = await t.patch(7, { quantity: 5 }, { 'Idempotency-Key': 'order-1' });
  assert.is(first.status, 200);
  const later = await t.patch(7, { quantity: 9 });
  assert.is(later.status, 200);
  const replay = await t.patch(7, { quantity: 5 }, { 'Idempotency-Key': 'order-1' });
  assert.is(replay.status, 200);
  assert.is(replay.headers['idempotent-replayed'], 'true');
  assert.is(replay.headers['log-receipt'], first.headers['log-receipt']);
  assert.is.not(replay.headers['log-receipt'], later.headers['log-receipt']);
  const r = receiptOf(replay.headers['log-receipt']);
  assert.is(r.seq, '2');
  const { publicKey } = (await json<PublishedKey[]>(t, '/v1/log/signing-keys'))[0]!;
  assert.is(checkReceipt(r, publicKey), 2);
});

/** While set, the store's batches wait for it (the suite below). */
let holdBatches: Promise<void> | undefined;
const batching = appSuite('signed receipts of one batch', {
  app: {
    signingKey: KEY,
    writer: 'thread',
    open: async (db, now) => {
      const store = await openStore(db, { now, writer: 'thread', signingKey: KEY });
      const appendBatch = store.appendBatch.bind(store);
      store.appendBatch = async (submissions, options) => {
        await holdBatches;
        return appendBatch(submissions, options);
      };
      return store;
    },
  },
});

batching('PATCHes committed in one batch, with and without keys, each carry the receipt of their own event', async ({ t }) => {
  for (let pet = 1; pet <= 12; pet++) await t.track(pet, 3);
  const { publicKey } = (await json<PublishedKey[]>(t, '/v1/log/signing-keys'))[0]!;
  const keyOf = (i: number): Record<string, string> => (i % 2 === 0 ? { 'Idempotency-Key': `batch-${i}` } : {});
  // Sent at once, the last repeating the first one's key while it is being written. The
  // store holds its batches until the service has all thirteen: the writes that come
  // while the first batch waits queue up, and the group commit takes them in one.
  let arrived = 0;
  let release = () => {};
  holdBatches = new Promise<void>((resolve) => (release = resolve));
  const count = () => void (++arrived === 13 && release());
  t.server.on('request', count);
  const sent = await Promise.all([
    ...Array.from({ length: 12 }, (_, i) => t.patch(i + 1, { quantity: 10 + i }, { 'X-Request-Id': `req-${i}`, ...keyOf(i) })),
    t.patch(1, { quantity: 10 }, { 'X-Request-Id': 'req-again', ...keyOf(0) }),
  ]).finally(() => {
    t.server.off('request', count);
    holdBatches = undefined;
  });
  // The two requests with the first key race: whichever the service took first wrote the
  // event; the other is answered from it (a replay) or refused while it is in flight.
  const firstWon = sent[0].status !== 409 && sent[0].headers['idempotent-replayed'] !== 'true';
  const [first, again] = firstWon ? [sent[0], sent[12]!] : [sent[12]!, sent[0]];
  const writes = [first, ...sent.slice(1, 12)];
  const events = await t.events();
  for (const [i, res] of writes.entries()) {
    assert.is(res.status, 200, res.text);
    const r = receiptOf(res.headers['log-receipt']);
    const event = events.find((e) => e.seq === BigInt(r.seq))!;
    assert.is(event.requestId, i === 0 && !firstWon ? 'req-again' : `req-${i}`, 'the receipt names the request`s own event');
    assert.is(r.hash, event.hash);
    assert.type(checkReceipt(r, publicKey), 'number', `receipt ${i} verifies`);
  }
  // One signature per batch: the writes committed together carry one checkpoint.
  const notes = new Set(writes.map((res) => receiptOf(res.headers['log-receipt']).note));
  assert.ok(notes.size < 12, `${notes.size} checkpoints for 12 writes`);
  assert.ok([200, 409].includes(again.status), again.text);
  if (again.status === 200) assert.is(again.headers['log-receipt'], first.headers['log-receipt']);
  for (const i of [0, 2, 4, 6, 8, 10]) {
    const replay = await t.patch(i + 1, { quantity: 10 + i }, keyOf(i));
    assert.is(replay.headers['idempotent-replayed'], 'true');
    assert.is(replay.headers['log-receipt'], writes[i]!.headers['log-receipt']);
  }
});

/** verify-log --url against the test's service, with its key. */
const verifyUrl = (t: TestApp, args: string[] = []) =>
  runScript('verify-log', ['--url', `http://127.0.0.1:${t.port}`, ...args], { env: { INVENTORY_KEY: t.key } });

signed('verify-log --url passes on an intact service and fails against a kept signed head after a tail cut', async ({ t }) => {
  await t.track(7, 3);
  await t.patch(7, { quantity: 5 });
  await t.patch(7, { quantity: 6 });
  const intact = await verifyUrl(t);
  assert.is(intact.status, 0, intact.stderr);
  assert.match(intact.stderr, /ok: 3 events through the API/);
  // What it prints is the signed head, to keep.
  const kept = JSON.parse(intact.stdout) as Head;
  assert.is(kept.seq, 3);
  const dir = mkdtempSync(join(tmpdir(), 'kept-heads-'));
  try {
    const file = join(dir, 'heads.jsonl');
    writeFileSync(file, intact.stdout);
    assert.is((await verifyUrl(t, ['--digests', file])).status, 0);
    assert.is(await t.target.tamper.deleteNewestEvent(t.db), 3);
    // The cut log still chains: only the kept head shows what was lost.
    const cut = await verifyUrl(t, ['--digests', file]);
    assert.is(cut.status, 1);
    assert.match(cut.stderr, /^error: BROKEN at seq 3: the log ends at seq 2, before a signed or kept head's seq 3: it was truncated\n$/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

signed('verify-log --digests takes kept head answers and checks their signatures with the key log', async ({ t }) => {
  await t.track(7, 3);
  const head = (await t.get('/v1/log/head')).text;
  const dir = mkdtempSync(join(tmpdir(), 'kept-heads-'));
  try {
    const file = join(dir, 'heads.jsonl');
    writeFileSync(file, `${head}\n`);
    const good = await runScript('verify-log', ['--digests', file], { db: t.db });
    assert.is(good.status, 0, good.stderr);
    const forged = JSON.stringify({ ...(JSON.parse(head) as Head), seq: 0, hash: '0'.repeat(64) });
    writeFileSync(file, `${forged}\n`);
    for (const args of [
      ['--db', t.db],
      ['--url', `http://127.0.0.1:${t.port}`],
    ]) {
      const bad = await runScript('verify-log', ['--digests', file, ...args], { env: { INVENTORY_KEY: t.key } });
      assert.is(bad.status, 1, args[0]);
      assert.match(bad.stderr, /signature does not verify with key [0-9a-f]{16}/, args[0]);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

signed('two instances on one database, each with its own key once endorsed: both listed, each one`s receipts verify', async ({ t }) => {
  const other = { pem: pemOf() };
  const writer = t.target.name === 'sqlite' ? ('thread' as const) : undefined;
  // A second key is not entered by the instance that brings it: the log's key endorses it first.
  const refused = await openStore(t.db, { signingKey: other, writer }).then(
    async (s) => (await s.close(), undefined),
    (error: Error) => error.message,
  );
  assert.match(String(refused), /is not endorsed by this log: endorse it with scripts\/keys endorse-signing/);
  assert.is((await json<PublishedKey[]>(t, '/v1/log/signing-keys')).length, 1, 'the refused key is not listed');
  await endorse(t.db, KEY, other);
  const second = await openStore(t.db, { signingKey: other, writer });
  try {
    await t.track(7, 3);
    const commands = makeCommandHandler({ store: second, now: Date.now });
    const written = await commands
      .handle({ type: 'SetQuantity', petId: 7n, quantity: 4 }, { actor: 'tester', requestId: 'second' })
      .then(appliedEntry);
    const mine = await t.patch(7, { quantity: 5 });
    const keys = await json<PublishedKey[]>(t, '/v1/log/signing-keys');
    assert.equal(keys.map((k) => k.keyId).sort(), [idOf(rawOf(KEY.pem)), idOf(rawOf(other.pem))].sort());
    // The first key has no endorsement; the second's is a signed note by the first, naming
    // this log and the second's verifier key, checked here with Node's crypto alone.
    const [first, endorsed] = keys;
    assert.equal([first!.keyId, first!.endorsedBy, first!.retiredAt], [idOf(rawOf(KEY.pem)), null, null]);
    const note = endorsed!.endorsedBy!;
    const text = note.slice(0, note.lastIndexOf('\n\n') + 1);
    const { logId } = await json<Head>(t, '/v1/log/head');
    assert.equal(text.split('\n').slice(0, 3), ['petstore-inventory/key-endorsement/v1', logId, endorsed!.verifierKey]);
    assert.match(text, /\ntime \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\n$/);
    const sig = Buffer.from(/^\u2014 \S+ (\S+)\n$/.exec(note.slice(text.length + 1))![1]!, 'base64');
    assert.ok(checks(first!.publicKey, [text], sig.subarray(4)), 'the endorsement is signed by the first key');
    for (const [header, pem] of [
      [written.receipt, other.pem],
      [mine.headers['log-receipt'], KEY.pem],
    ] as const) {
      const r = receiptOf(header);
      const listed = keys.find((k) => k.keyId === idOf(rawOf(pem)))!;
      assert.type(checkReceipt(r, listed.publicKey), 'number');
      const another = keys.find((k) => k !== listed)!;
      assert.is(checkReceipt(r, another.publicKey), 'another key hash');
    }
    assert.is(receiptOf(written.receipt).seq, '2');
    assert.is(receiptOf(mine.headers['log-receipt']).seq, '3');
    const verdict = await verifyUrl(t);
    assert.is(verdict.status, 0, verdict.stderr);
    assert.match(verdict.stderr, /ok: 2 signing keys/);
  } finally {
    await second.close();
  }
});

signed("the auditors' guide's standalone verifier accepts a real head and receipt, and refuses altered ones", async ({ t }) => {
  const verifier = blocks(pageText()).find((b) => b.lang === 'js' && b.text.includes('petstore-inventory/receipt/v1'));
  assert.ok(verifier, 'the guide shows the verifier');
  await t.track(7, 3);
  const receipt = String((await t.patch(7, { quantity: 5 })).headers['log-receipt']);
  const head = JSON.parse((await t.get('/v1/log/head')).text) as Head;
  const dir = mkdtempSync(join(tmpdir(), 'standalone-verifier-'));
  try {
    // Outside the repository: it imports nothing of the project.
    writeFileSync(join(dir, 'verify_signed.mjs'), verifier.text);
    writeFileSync(join(dir, 'keys.json'), (await t.get('/v1/log/signing-keys')).text);
    writeFileSync(join(dir, 'head.json'), JSON.stringify(head));
    writeFileSync(join(dir, 'altered.json'), JSON.stringify({ ...head, keys: { ...head.keys, seq: head.keys.seq + 1 } }));
    const run = (arg: string) =>
      spawnSync(process.execPath, ['verify_signed.mjs', 'keys.json', arg], { cwd: dir, encoding: 'utf8', timeout: 20_000 });
    const good = run('head.json');
    assert.is(good.status, 0, good.stdout + good.stderr);
    assert.is(good.stdout, `OK: head: seq ${head.seq} ${head.hash} of log ${head.logId}, signed by ${head.signature.keyId}\n`);
    const r = receiptOf(receipt);
    const ok = run(receipt);
    assert.is(ok.status, 0, ok.stdout + ok.stderr);
    assert.is(ok.stdout, `OK: receipt: seq ${r.seq} ${r.hash} of log ${r.log}, in the tree of 2 signed by ${head.signature.keyId}\n`);
    const altered = run('altered.json');
    assert.is(altered.status, 1);
    assert.match(altered.stdout, /^BAD: head: .*wrong signature\n$/);
    // The same seq with a leading zero is no seq the service writes: not a receipt.
    const zeroSeq = run(receipt.replace(`seq=${r.seq},`, `seq=0${r.seq},`));
    assert.is(zeroSeq.status, 1, zeroSeq.stdout);
    assert.match(zeroSeq.stdout, /not a Log-Receipt\n$/);
    const otherSeq = run(receipt.replace(`seq=${r.seq},`, `seq=${Number(r.seq) - 1},`));
    assert.is(otherSeq.status, 1);
    assert.match(otherSeq.stdout, /^BAD: receipt: .*not in the checkpoint's tree of 2\n$/);
    const otherNote = run(
      receipt.replace(/checkpoint=:[^:]+:/, `checkpoint=:${Buffer.from(r.note.replace('\n2\n', '\n3\n')).toString('base64')}:`),
    );
    assert.is(otherNote.status, 1);
    assert.match(otherNote.stdout, /^BAD: receipt: .*wrong signature\n$/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

signed('copy-store keeps the logId: heads and receipts signed before the copy verify against the copy', async ({ t }) => {
  await t.track(7, 3);
  const receipt = receiptOf((await t.patch(7, { quantity: 5 })).headers['log-receipt']);
  const head = (await t.get('/v1/log/head')).text;
  const dir = tempDir('signed-copy-');
  try {
    const copy = dir.path('copy.db');
    assert.is((await runScript('migrate', ['--db', copy])).status, 0);
    const copied = await runScript('copy-store', ['--from', t.db, '--to', copy]);
    assert.is(copied.status, 0, copied.stderr);
    const store = await openStore(copy, { readonly: true });
    try {
      assert.is((await store.logHead()).logId, receipt.log);
      const [listed] = await store.signingKeys();
      assert.type(checkReceipt(receipt, listed!.publicKey), 'number');
      assert.is((await store.eventsAfter(BigInt(receipt.seq) - 1n, 1))[0]![9], receipt.hash);
    } finally {
      await store.close();
    }
    writeFileSync(dir.path('heads.jsonl'), `${head}\n`);
    const verified = await runScript('verify-log', ['--digests', dir.path('heads.jsonl')], { db: copy });
    assert.is(verified.status, 0, verified.stderr);
  } finally {
    dir.cleanup();
  }
});

needing(signed, [tools.curl])(
  "the auditors' guide's cron keeps signed heads, which verify-log checks by --url and by --db",
  async ({ t }) => {
    const cron = blocks(pageText()).find((b) => b.heading === SIGNED && b.lang === 'crontab');
    assert.ok(cron, 'the guide shows the cron line');
    const line = cron.text.trim();
    assert.ok(line.startsWith('*/10 * * * * '), 'every ten minutes');
    const command = line.replace(/^(\S+\s+){5}/, '').replace('https://inventory.petstore.example', `http://127.0.0.1:${t.port}`);
    const home = mkdtempSync(join(tmpdir(), 'auditor-home-'));
    try {
      writeFileSync(join(home, '.inventory-audit-key'), `${t.key}\n`);
      // Not spawnSync: the service answering curl runs in this process.
      const fetchHead = () =>
        new Promise<number | null>((resolve, reject) => {
          const child = spawn('bash', ['-c', command], { env: { ...process.env, HOME: home }, stdio: 'ignore', timeout: 20_000 });
          child.on('error', reject);
          child.on('close', resolve);
        });
      assert.is(await fetchHead(), 0);
      await t.track(7, 3);
      await t.patch(7, { quantity: 4 });
      assert.is(await fetchHead(), 0);
      const heads = join(home, 'inventory-heads.jsonl');
      const kept = readFileSync(heads, 'utf8').trim().split('\n');
      assert.equal(
        kept.map((l) => (JSON.parse(l) as Head).seq),
        [0, 2],
      );
      const byUrl = await verifyUrl(t, ['--digests', heads]);
      assert.is(byUrl.status, 0, byUrl.stderr);
      assert.match(byUrl.stderr, /it extends 2 kept heads/);
      const byDb = await runScript('verify-log', ['--digests', heads], { db: t.db });
      assert.is(byDb.status, 0, byDb.stderr);
      assert.match(byDb.stderr, /it extends 4 digests/);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  },
);

signed.run();
batching.run();

const keyFile = suite('the signing key file');

keyFile('made when missing: PKCS#8 PEM, 0600 in a new 0700 directory; the same key on every load', () => {
  const dir = mkdtempSync(join(tmpdir(), 'signing-key-'));
  try {
    const path = join(dir, 'data', 'signing-key.pem');
    const made = loadSigningKey(path);
    assert.is(statSync(path).mode & 0o777, 0o600);
    assert.is(statSync(join(dir, 'data')).mode & 0o777, 0o700);
    const text = readFileSync(path, 'utf8');
    assert.ok(text.startsWith('-----BEGIN PRIVATE KEY-----\n'), 'PKCS#8');
    assert.is(made.pem, text);
    assert.is(loadSigningKey(path).pem, text);
    assert.is(createPublicKey(text).asymmetricKeyType, 'ed25519');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

keyFile.run();

const service = suite('the service signs with INVENTORY_SIGNING_KEY');

service('INVENTORY_SIGNING_KEY: data/signing-key.pem unless set; empty is refused', () => {
  assert.is(readConfig({}).signingKeyPath, 'data/signing-key.pem');
  assert.is(readConfig({ INVENTORY_SIGNING_KEY: '/etc/inventory/a.pem' }).signingKeyPath, '/etc/inventory/a.pem');
  assert.throws(
    () => readConfig({ INVENTORY_SIGNING_KEY: ' ' }),
    (e: Error) => e instanceof ConfigError && /INVENTORY_SIGNING_KEY/.test(e.message),
  );
});

service('makes its key file 0600 at first start, enters it in the key log once, and signs its heads with it', async () => {
  const dir = tempDir('signing-service-');
  const env = { INVENTORY_SIGNING_KEY: dir.path('keys/signing.pem') };
  try {
    const first = await startService({ db: dir.path('inventory.db'), expectKey: true, env });
    const pem = readFileSync(env.INVENTORY_SIGNING_KEY, 'utf8');
    assert.is(statSync(env.INVENTORY_SIGNING_KEY).mode & 0o777, 0o600);
    const key = first.bootstrapKey!;
    const keys = JSON.parse((await first.get('/v1/log/signing-keys', key)).text) as PublishedKey[];
    assert.equal(
      keys.map((k) => [k.keyId, k.publicKey]),
      [[idOf(rawOf(pem)), rawOf(pem)]],
    );
    assert.is((await first.stop()).code, 0);
    const again = await startService({ db: dir.path('inventory.db'), expectKey: false, env });
    try {
      assert.is(
        (JSON.parse((await again.get('/v1/log/signing-keys', key)).text) as PublishedKey[]).length,
        1,
        'the same key, entered once',
      );
      const head = JSON.parse((await again.get('/v1/log/head', key)).text) as Head;
      assert.ok(checks(keys[0]!.publicKey, headLines(head), Buffer.from(head.signature.value, 'base64url')));
    } finally {
      await again.stop();
    }
  } finally {
    dir.cleanup();
  }
});

service.run();
