// How long a batch waits for the write lock: up to its deadline, never longer than the
// connection's busy_timeout. A request that already waited behind an earlier batch does
// not wait the full time again.
import type { Statement } from 'better-sqlite3';
import type { Db } from '../database.ts';

/** The step in which a batch's wait for the write lock is set. */
const WAIT_STEP_MS = 50;

/** Runs `run` with the connection's wait for the lock ending at waitUntil (Date.now time), if given. */
export function makeLockWait(db: Db): <T>(waitUntil: number | undefined, run: () => T) => T {
  const busyTimeout = db.pragma('busy_timeout', { simple: true }) as number;
  // A PRAGMA cannot take a parameter: its statements are prepared once for each wait,
  // in steps of WAIT_STEP_MS rounded down (a batch gives up at most one step early),
  // not prepared again for each batch.
  const waits = new Map<number, Statement>();
  const waitFor = (ms: number) => {
    let set = waits.get(ms);
    if (!set) waits.set(ms, (set = db.prepare(`PRAGMA busy_timeout = ${ms}`)));
    set.run();
  };
  return (waitUntil, run) => {
    if (waitUntil === undefined) return run();
    const waitMs = Math.max(0, Math.min(busyTimeout, Math.floor(waitUntil - Date.now())));
    waitFor(waitMs - (waitMs % WAIT_STEP_MS));
    try {
      return run();
    } finally {
      waitFor(busyTimeout);
    }
  };
}
