// What is done when a running service's -wal and -shm are deleted or replaced under it
// (file-identity.ts notices). The writes acknowledged since the last checkpoint live
// only in the log the service still holds open: a checkpoint from that connection
// copies them into the database file, which is still the real one. That is safe only
// while no other process has opened the database on new side files (its writer would
// not see ours); such a process is noticed by the side files it created at the paths.
// And no process of ours opens the database beside one whose side files are gone: a
// second writer on new side files is what destroys the file. Such a process is found by
// what it holds open: a -wal or -shm that the kernel shows as deleted.
import { readdirSync, readFileSync, readlinkSync, realpathSync, statSync } from 'node:fs';
import type Database from 'better-sqlite3';

/** What became of the acknowledged writes in a log that is no longer at its path. */
export const Rescue = {
  NotNeeded: 0,
  /** Checkpointed into the database file: nothing acknowledged is lost. */
  Saved: 1,
  /** Another process opened the database on new side files first: not checkpointed,
   * since that would interleave two logs in one file. */
  Unsafe: 2,
} as const;
export type Rescue = (typeof Rescue)[keyof typeof Rescue];

/** What a message about the lost side files adds about the acknowledged writes. */
export function rescueMessage(rescue: number): string {
  if (rescue === Rescue.Saved) return '; the writes acknowledged before were saved into the database file';
  if (rescue === Rescue.Unsafe) {
    return '; another process opened the database on new side files first, so the writes acknowledged since the last checkpoint could not be copied back';
  }
  return '';
}

/**
 * Checkpoints the log this connection still holds into the database file, once no
 * other process can be writing beside it. Returns undefined while the checkpoint could
 * not finish (a reader of ours in the log): try again.
 */
export function saveAcknowledged(db: Database.Database, path: string): Rescue | undefined {
  const appeared = ['-wal', '-shm'].some((suffix) => statSync(`${path}${suffix}`, { throwIfNoEntry: false }) !== undefined);
  if (appeared) return Rescue.Unsafe;
  const [result] = db.pragma('wal_checkpoint(TRUNCATE)') as { busy: number }[];
  return result && result.busy === 0 ? Rescue.Saved : undefined;
}

/** The processes (other than this one) that hold a POSIX lock on any file: SQLite holds
 * one on the -shm of every database it has open in WAL mode, for as long as it is open. */
function lockHolders(): Set<number> {
  let table: string;
  try {
    table = readFileSync('/proc/locks', 'utf8');
  } catch {
    return new Set();
  }
  const pids = new Set<number>();
  for (const line of table.split('\n')) {
    const m = /^\d+:\s+(?:->\s+)?\S+\s+\S+\s+\S+\s+(\d+)\s/.exec(line);
    if (m && Number(m[1]) !== process.pid) pids.add(Number(m[1]));
  }
  return pids;
}

/** Processes that hold this database's -wal or -shm open although it is no longer at its path. */
function strangers(path: string): number[] {
  let real: string;
  try {
    real = realpathSync(path);
  } catch {
    return [];
  }
  // What the kernel shows for an open file that was deleted or replaced by a rename.
  const lost = new Set([`${real}-wal (deleted)`, `${real}-shm (deleted)`]);
  return [...lockHolders()].filter((pid) => {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      return false; // gone, or another user's: nothing can be told
    }
    return fds.some((fd) => {
      try {
        return lost.has(readlinkSync(`/proc/${pid}/fd/${fd}`));
      } catch {
        return false;
      }
    });
  });
}

const pause = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

/**
 * Why the database at path must not be opened now: another process holds its -wal or
 * -shm open although they are no longer the files at their paths (deleted or replaced
 * while it ran). Opening it would start a second writer on new side files, unaware of
 * that process's. SQLite itself deletes the log when its last connection closes: only a
 * process seen that way over a fifth of a second counts. Linux only (the kernel's lock
 * table and /proc); elsewhere, and for another user's processes, nothing is seen and
 * nothing is refused.
 */
export function openedElsewhereProblem(path: string): string | undefined {
  if (process.platform !== 'linux') return undefined;
  let found = strangers(path);
  for (let look = 0; look < 4 && found.length > 0; look++) {
    pause(50);
    const again = new Set(strangers(path));
    found = found.filter((pid) => again.has(pid));
  }
  if (found.length === 0) return undefined;
  return (
    `process ${found.join(', ')} has ${path} open, but its -wal and -shm files are not the ones at their paths ` +
    '(deleted or replaced while it ran): a second writer beside it would corrupt the database. ' +
    'Stop that process (the service saves what it acknowledged when it notices), then try again'
  );
}
