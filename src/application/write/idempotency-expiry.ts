// Removes expired idempotency records in the background, in small steps: each step is
// one short transaction of at most STEP_ROWS rows, and the next waits for a turn of the
// event loop and a pause, so that batches of writes slip in between and the table's
// clean-up never holds the writer (on SQLite, the one write connection) for long.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../../support/logger.ts';
import type { IdempotencyStore } from '../../store/idempotency.ts';

const STEP_ROWS = 200;
const PAUSE_MS = 20;
const EVERY_MS = 60_000;

/** Removes everything expired at now(), step by step; returns how many were removed. */
export async function expireIdempotency(
  records: Pick<IdempotencyStore, 'expire'>,
  now: () => number,
  stepRows = STEP_ROWS,
): Promise<number> {
  const at = new Date(now()).toISOString();
  let removed = 0;
  for (;;) {
    const step = await records.expire(at, stepRows);
    removed += step;
    if (step < stepRows) return removed;
    await sleep(PAUSE_MS);
  }
}

/** Runs expireIdempotency once a minute; returns a function that stops it. */
export function startIdempotencyExpiry(records: Pick<IdempotencyStore, 'expire'>, now: () => number, logger: Logger): () => void {
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    expireIdempotency(records, now).then(
      (removed) => {
        running = false;
        if (removed > 0) logger.debug({ removed }, 'expired idempotency records removed');
      },
      (error: Error) => {
        running = false;
        // Tried again at the next round: an unavailable database is reported by /readyz.
        logger.warn({ err: { message: error.message } }, 'could not remove expired idempotency records');
      },
    );
  }, EVERY_MS);
  timer.unref();
  return () => clearInterval(timer);
}
