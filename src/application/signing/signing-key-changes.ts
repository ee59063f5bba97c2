// What scripts/keys does to the log's signing keys. A new key is entered with an
// endorsement: a C2SP signed note by the log's current key (the file the service signs
// with) naming the new key's verifier key, which anyone can check without the database.
// A key whose endorser is lost is entered unendorsed, said so in the key log. A key is
// retired by a chained SigningKeyRetired; the instances signing with it stop.
import { endorsementText, originOf, signedNote, verifierKey } from '../../support/checkpoint.ts';
import { makeSigner, type SigningKeyData } from '../../support/signing.ts';
import type { AuditReads } from '../../store/audit-reads.ts';
import { endorsedData, UNENDORSED_DATA, type SigningKeyAddition, type SigningKeyLog } from '../../store/signing-keys.ts';

type Store = SigningKeyLog & Pick<AuditReads, 'logHead' | 'signingKeys'>;

/** A refusal of a signing key change, said to the operator in one line. */
export class SigningKeyChangeRefused extends Error {
  override name = 'SigningKeyChangeRefused';
}

export interface Added {
  outcome: SigningKeyAddition;
  keyId: string;
  verifierKey: string;
}

/** The endorsement note by `current` of `added` in the log logId, signed at time. */
function endorsementNote(logId: string, current: SigningKeyData, added: SigningKeyData, time: string): string {
  const origin = originOf(logId);
  const endorser = makeSigner(current);
  const text = endorsementText(logId, verifierKey(origin, Buffer.from(makeSigner(added).publicKey, 'base64url')), time);
  return signedNote(text, origin, Buffer.from(endorser.publicKey, 'base64url'), endorser.sign(text));
}

/** Enters `added` endorsed by `current`, which the log must list unretired. */
export async function endorseSigningKey(store: Store, current: SigningKeyData, added: SigningKeyData, actor: string, now: number) {
  const [{ logId }, keys] = await Promise.all([store.logHead(), store.signingKeys()]);
  const endorser = makeSigner(current);
  const listed = keys.find((k) => k.keyId === endorser.keyId);
  if (!listed)
    throw new SigningKeyChangeRefused(`the current key ${current.file} (key ${endorser.keyId}) is not a signing key of this log`);
  if (listed.retiredAt !== null)
    throw new SigningKeyChangeRefused(`the current key ${current.file} (key ${endorser.keyId}) was retired at ${listed.retiredAt}`);
  const note = endorsementNote(logId, current, added, new Date(now).toISOString());
  return enter(store, logId, added, endorsedData(note), actor);
}

/** Enters `added` with no endorsement: monitors trust it only once an auditor pins it. */
export async function addUnendorsedSigningKey(store: Store, added: SigningKeyData, actor: string) {
  const { logId } = await store.logHead();
  return enter(store, logId, added, UNENDORSED_DATA, actor);
}

async function enter(store: Store, logId: string, added: SigningKeyData, data: string, actor: string): Promise<Added> {
  const signer = makeSigner(added);
  const outcome = await store.addSigningKey({ keyId: signer.keyId, publicKey: signer.publicKey, data }, actor);
  return { outcome, keyId: signer.keyId, verifierKey: verifierKey(originOf(logId), Buffer.from(signer.publicKey, 'base64url')) };
}
