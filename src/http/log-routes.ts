// GET /v1/log/head: the newest event's seq and hash and the key log's head, as the
// digests verify-log --digest takes. An auditor fetches and keeps them somewhere the
// database's owner cannot change; any later log must still extend them.
import Router from '@koa/router';
import { formatDigest } from '../store/hash-chain.ts';
import type { LogHead, AuditReads } from '../store/audit-reads.ts';

export interface LogHeadJson {
  seq: number;
  hash: string;
  recordedAt: string | null;
  digest: string;
  keys: { seq: number; hash: string; digest: string };
  time: string;
}

/** The head as the route answers it and the service logs it; time: when it was read. */
export function logHeadJson(head: LogHead, time: number): LogHeadJson {
  return {
    seq: head.seq,
    hash: head.hash,
    recordedAt: head.recordedAt,
    digest: formatDigest(head),
    keys: { ...head.keys, digest: formatDigest({ ...head.keys, chain: 'keys' }) },
    time: new Date(time).toISOString(),
  };
}

export function logRouter({ store, now }: { store: Pick<AuditReads, 'logHead'>; now: () => number }): Router {
  const router = new Router({ prefix: '/v1', sensitive: true, strict: true });
  router.get('/log/head', async (ctx) => {
    const head = await store.logHead();
    ctx.set('Cache-Control', 'no-store');
    ctx.body = logHeadJson(head, now());
  });
  return router;
}
