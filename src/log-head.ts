// The service logs the head of the log (the digests GET /v1/log/head answers) once a
// minute while the log grows: a log shipped elsewhere then keeps digests too, without
// anyone having to ask.
import { logHeadJson } from './http/log-routes.ts';
import type { Logger } from './logger.ts';
import type { Signer } from './signing.ts';
import type { AuditReads } from './store/audit-reads.ts';

const HEAD_LOG_INTERVAL_MS = 60_000;

interface HeadLogDeps {
  store: Pick<AuditReads, 'logHead'>;
  logger: Logger;
  /** Signs the logged heads as GET /v1/log/head does. */
  signer?: Signer;
  now?: () => number;
  intervalMs?: number;
}

/** Starts the minute's check; returns what stops it. Checks once at once. */
export function logHeadWhileGrowing({ store, logger, signer, now = Date.now, intervalMs = HEAD_LOG_INTERVAL_MS }: HeadLogDeps): () => void {
  let logged = '';
  let failing = false;
  const check = async () => {
    try {
      const head = logHeadJson(await store.logHead(), now(), signer);
      failing = false;
      const seen = `${head.digest} ${head.keys.digest}`;
      if (seen === logged) return;
      logged = seen;
      logger.info({ logHead: head }, 'log head');
    } catch (error) {
      // One line per failing stretch, not one a minute: the storage's own faults are
      // logged where they happen.
      if (!failing) logger.warn({ err: { message: (error as Error).message } }, 'cannot read the head of the log');
      failing = true;
    }
  };
  void check();
  const timer = setInterval(() => void check(), intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
