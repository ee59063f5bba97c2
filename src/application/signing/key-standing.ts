// Whether each signing key of the log was entered as scripts/keys enters one. After the
// log's first key, every SigningKeyAdded holds an endorsement that another key of the log
// signed within its time, naming this log and the new key, or the marker that says it was
// entered unendorsed. One with neither (a row written with SQL, however well chained) is
// not a key the operator's tools made: verify-log reports it BROKEN and the service does
// not sign with it.
import { originOf, parseVerifierKey, verifierKey, type Verifier } from '../../support/checkpoint.ts';
import type { SigningKeyInfo } from '../../store/signing-keys.ts';
import { endorserOf, type ListedKey } from './trust.ts';

/** The keys of the log after its first that have neither a verifying endorsement nor
 * the unendorsed marker, each with why, in the key log's order. */
export function unvouchedKeys(keys: readonly SigningKeyInfo[], logId: string): { keyId: string; reason: string }[] {
  const origin = originOf(logId);
  const listed: ListedKey[] = keys.map((k) => ({ ...k, verifierKey: verifierKey(origin, Buffer.from(k.publicKey, 'base64url')) }));
  const verifiers = listed.map((k) => parseVerifierKey(k.verifierKey)).filter((v): v is Verifier => !(v instanceof Error));
  const unvouched: { keyId: string; reason: string }[] = [];
  for (const [i, key] of listed.entries()) {
    if (i === 0 || keys[i]!.unendorsed) continue;
    // A key does not vouch for itself.
    const others = verifiers.filter((v) => v.text !== key.verifierKey);
    if (endorserOf(key, logId, others, listed)) continue;
    const what =
      key.endorsedBy === null
        ? 'has neither an endorsement nor the mark of a key added --unendorsed'
        : 'has an endorsement that does not verify (signed by no other key of the log within its time, or naming another log or key)';
    unvouched.push({ keyId: key.keyId, reason: `the SigningKeyAdded of signing key ${key.keyId} ${what}: scripts/keys did not enter it` });
  }
  return unvouched;
}
