// Which keys a verifier of checkpoints trusts. A signature proves only as much as the key
// behind it is trusted, so the trust decision lives here: a checkpoint is accepted when a
// trusted key signed it, whatever the log says of its keys. Trusted are the pinned keys
// and, transitively, every key whose endorsement (a signed note naming this log and the
// key's verifier key) a trusted key signed before it was retired. And a key signs only
// within its time in the key log, give or take the clock margin.
import { noteSigners, parseEndorsement, parseNote, parseVerifierKey, type Note, type Verifier } from '../../support/checkpoint.ts';

/** How far a signed time may be outside its key's time in the key log: the actor rule's clock margin. */
export const KEY_TIME_MARGIN_MS = 5_000;

/** The pinned keys that signed the note (each signature checked); none means untrusted. */
export function trustedSigners(note: Note, pinned: readonly Verifier[]): Verifier[] {
  return noteSigners(note, pinned);
}

/** Verifier keys as given (--trust, a keys file), parsed; throws naming the first bad one. */
export function verifiersOf(keys: readonly string[], from: string): Verifier[] {
  return keys.map((text) => {
    const v = parseVerifierKey(text);
    if (v instanceof Error) throw new Error(`${from}: ${JSON.stringify(text.slice(0, 120))} is no verifier key: ${v.message}`);
    return v;
  });
}

/** A key as GET /v1/log/signing-keys lists it, as far as trust goes. */
export interface ListedKey {
  keyId: string;
  verifierKey: string;
  addedAt: string;
  retiredAt: string | null;
  endorsedBy: string | null;
}

/** Why a time signed by the key is outside its time in the key log (more than the margin), or undefined. */
export function keyTimeProblem(time: string, key: Pick<ListedKey, 'keyId' | 'addedAt' | 'retiredAt'>): string | undefined {
  const at = Date.parse(time);
  if (at < Date.parse(key.addedAt) - KEY_TIME_MARGIN_MS)
    return `it is dated ${time}, before its key ${key.keyId} was added (${key.addedAt})`;
  if (key.retiredAt !== null && at > Date.parse(key.retiredAt) + KEY_TIME_MARGIN_MS)
    return `it is dated ${time}, after its key ${key.keyId} was retired (${key.retiredAt})`;
  return undefined;
}

/** Why a checkpoint was signed by a trusted key outside that key's time in the key log
 * (listed), or undefined. */
export function signedOutsideKeyTime(
  checkpoint: { note: string; time: string },
  trusted: readonly Verifier[],
  listed: readonly ListedKey[],
): string | undefined {
  const note = parseNote(checkpoint.note);
  if (note instanceof Error) return note.message;
  for (const signer of trustedSigners(note, trusted)) {
    const key = listed.find((k) => k.verifierKey === signer.text);
    const wrong = key && keyTimeProblem(checkpoint.time, key);
    if (wrong) return wrong;
  }
  return undefined;
}

/** The key among `trusted` whose endorsement of `key` in the log logId holds, signed within
 * that key's time; undefined when none does. */
export function endorserOf(
  key: ListedKey,
  logId: string,
  trusted: readonly Verifier[],
  listed: readonly ListedKey[],
): Verifier | undefined {
  if (key.endorsedBy === null) return undefined;
  const note = parseNote(key.endorsedBy);
  if (note instanceof Error) return undefined;
  const endorsement = parseEndorsement(note.text);
  if (endorsement instanceof Error || endorsement.logId !== logId || endorsement.verifierKey !== key.verifierKey) return undefined;
  return noteSigners(note, trusted).find((signer) => {
    const entry = listed.find((k) => k.verifierKey === signer.text);
    return entry === undefined || keyTimeProblem(endorsement.time, entry) === undefined;
  });
}

/**
 * The pinned keys and the listed keys endorsed, transitively, by a trusted key; and for
 * each key trusted by endorsement, which key endorsed it.
 */
export function trustedKeys(
  pinned: readonly Verifier[],
  listed: readonly ListedKey[],
  logId: string,
): { trusted: Verifier[]; endorsed: { key: ListedKey; by: Verifier }[] } {
  const trusted = [...pinned];
  const endorsed: { key: ListedKey; by: Verifier }[] = [];
  for (let grew = true; grew;) {
    grew = false;
    for (const key of listed) {
      if (trusted.some((v) => v.text === key.verifierKey)) continue;
      const by = endorserOf(key, logId, trusted, listed);
      const verifier = by && parseVerifierKey(key.verifierKey);
      if (!by || !verifier || verifier instanceof Error) continue;
      trusted.push(verifier);
      endorsed.push({ key, by });
      grew = true;
    }
  }
  return { trusted, endorsed };
}
