// GET /v1/log/head: the newest event's seq and hash and the key log's head, as the
// digests verify-log --digest takes, signed by this instance's key. An auditor fetches
// and keeps them somewhere the database's owner cannot change; any later log must still
// extend them, and the signature proves to anyone that the service published them.
// GET /v1/log/signing-keys: the public keys those signatures are checked with, as the
// key log records them.
import { logHeadJson } from '../application/log-head.ts';
import type { AuditReads } from '../store/audit-reads.ts';
import type { Signer } from '../support/signing.ts';
import type { Route } from './road.ts';

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
