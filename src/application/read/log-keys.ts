// The log's reads that its public routes answer: its head, and its signing keys as a
// verifier takes them (each with its verifier key for this log's origin).
import type { AuditReads } from '../../store/audit-reads.ts';
import { originOf, verifierKey } from '../../support/checkpoint.ts';

export type LogReadSource = Pick<AuditReads, 'logHead' | 'signingKeys'>;

/** Every signing key the log ever had, retired ones included, in the store's order. */
export async function publishedSigningKeys(store: LogReadSource) {
  const [keys, head] = await Promise.all([store.signingKeys(), store.logHead()]);
  const origin = originOf(head.logId);
  return keys.map((k) => ({
    keyId: k.keyId,
    publicKey: k.publicKey,
    verifierKey: verifierKey(origin, Buffer.from(k.publicKey, 'base64url')),
    addedAt: k.addedAt,
    retiredAt: k.retiredAt,
    endorsedBy: k.endorsedBy,
  }));
}
