// GET /v1/log/head: the newest event's seq and hash and the key log's head, as the
// digests verify-log --digest takes, signed by this instance's key. An auditor fetches
// and keeps them somewhere the database's owner cannot change; any later log must still
// extend them, and the signature proves to anyone that the service published them.
// GET /v1/log/signing-keys: the public keys those signatures are checked with, as the
// key log records them.
import { formatDigest } from '../store/hash-chain.ts';
import type { LogHead, AuditReads } from '../store/audit-reads.ts';
import { headMessage, type Signer } from '../signing.ts';
import type { Route } from './road.ts';

export interface LogHeadJson {
  logId: string;
  seq: number;
  hash: string;
  recordedAt: string | null;
  digest: string;
  keys: { seq: number; hash: string; digest: string };
  time: string;
  /** value: base64url Ed25519 signature over headMessage (signing.ts). */
  signature?: { keyId: string; value: string };
}

/** The head as the route answers it and the service logs it; time: when it was read. */
export function logHeadJson(head: LogHead, time: number, signer?: Signer): LogHeadJson {
  const json: LogHeadJson = {
    logId: head.logId,
    seq: head.seq,
    hash: head.hash,
    recordedAt: head.recordedAt,
    digest: formatDigest(head),
    keys: { ...head.keys, digest: formatDigest({ ...head.keys, chain: 'keys' }) },
    time: new Date(time).toISOString(),
  };
  if (signer) json.signature = { keyId: signer.keyId, value: signer.sign(headMessage(json)).toString('base64url') };
  return json;
}

export interface LogRouteDeps {
  store: Pick<AuditReads, 'logHead' | 'signingKeys'>;
  now: () => number;
  /** The instance's signing key; the service always has one. */
  signer?: Signer;
}

export function logRoutes({ store, now, signer }: LogRouteDeps): Route[] {
  return [
    {
      method: 'GET',
      template: '/v1/log/head',
      auth: true,
      handler: async () => {
        const head = await store.logHead();
        return { headers: { 'Cache-Control': 'no-store' }, body: logHeadJson(head, now(), signer) };
      },
    },
    {
      method: 'GET',
      template: '/v1/log/signing-keys',
      auth: true,
      handler: async () => ({ headers: { 'Cache-Control': 'no-store' }, body: await store.signingKeys() }),
    },
  ];
}
