// Which keys a verifier of checkpoints trusts. A signature proves only as much as the key
// behind it is trusted, so the trust decision lives in this one function: a checkpoint is
// accepted when a pinned key signed it, whatever the log says of its keys.
import { noteSigners, parseVerifierKey, type Note, type Verifier } from '../support/checkpoint.ts';

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
