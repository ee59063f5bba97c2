// The head of the log as GET /v1/log/head answers it, signed by this instance's key, and
// the service's own log of it: once a minute while the log grows, so that a log shipped
// elsewhere keeps digests too, without anyone having to ask.
import type { Logger } from '../../support/logger.ts';
import { headMessage, type Signer } from '../../support/signing.ts';
import type { AuditReads, LogHead } from '../../store/audit-reads.ts';
import { formatDigest } from '../../store/hash-chain.ts';

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

const HEAD_LOG_INTERVAL_MS = 60_000;

interface HeadLogDeps {
  store: Pick<AuditReads, 'logHead'>;
  logger: Logger;
  /** Signs the logged heads as GET /v1/log/head does. */
  signer?: Signer;
  now?: () => number;
  intervalMs?: number;
  /** Runs a check every intervalMs until what it returns is called: a timer that does
   * not hold the process open, unless a test drives the checks itself. */
  every?: (intervalMs: number, check: () => Promise<void>) => () => void;
}

const everyInterval: NonNullable<HeadLogDeps['every']> = (intervalMs, check) => {
  const timer = setInterval(() => void check(), intervalMs);
  timer.unref();
  return () => clearInterval(timer);
};

/** Starts the minute's check; returns what stops it. Checks once at once. */
export function logHeadWhileGrowing({
  store,
  logger,
  signer,
  now = Date.now,
  intervalMs = HEAD_LOG_INTERVAL_MS,
  every = everyInterval,
}: HeadLogDeps): () => void {
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
  return every(intervalMs, check);
}
