// What is done when a running service's -wal and -shm are deleted or replaced under it
// (file-identity.ts notices). The writes acknowledged since the last checkpoint live
// only in the log the service still holds open: a checkpoint from that connection
// copies them into the database file, which is still the real one. That is safe only
// while no other process has opened the database on new side files (its writer would
// not see ours); such a process is noticed by the side files it created at the paths.
// And no process of ours opens the database beside one whose side files are gone: a
// second writer on new side files is what destroys the file.
import { closeSync, openSync, readFileSync, readSync, statSync } from 'node:fs';
import type { Db } from '../database.ts';

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
export function saveAcknowledged(db: Db, path: string): Rescue | undefined {
  const appeared = ['-wal', '-shm'].some((suffix) => statSync(`${path}${suffix}`, { throwIfNoEntry: false }) !== undefined);
  if (appeared) return Rescue.Unsafe;
  const [result] = db.pragma('wal_checkpoint(TRUNCATE)') as { busy: number }[];
  return result && result.busy === 0 ? Rescue.Saved : undefined;
}

/** /proc/locks names a file by major:minor (hex) and inode, as the kernel encodes st_dev. */
function lockKey(dev: bigint, ino: bigint): string {
  const major = ((dev >> 8n) & 0xfffn) | ((dev >> 32n) & ~0xfffn);
  const minor = (dev & 0xffn) | ((dev >> 12n) & ~0xffn);
  return `${major.toString(16).padStart(2, '0')}:${minor.toString(16).padStart(2, '0')}:${ino}`;
}

/** The processes (other than this one) holding a POSIX lock on each file, by lock key. */
function lockHolders(): Map<string, Set<number>> | undefined {
  let table: string;
  try {
    table = readFileSync('/proc/locks', 'utf8');
  } catch {
    return undefined;
  }
  const holders = new Map<string, Set<number>>();
  for (const line of table.split('\n')) {
    const m = /^\d+:\s+(?:->\s+)?\S+\s+\S+\s+\S+\s+(\d+)\s+([0-9a-f]+:[0-9a-f]+:\d+)\s/.exec(line);
    if (!m) continue;
    const pid = Number(m[1]);
    if (pid === process.pid) continue;
    const key = m[2]!;
    if (!holders.has(key)) holders.set(key, new Set());
    holders.get(key)!.add(pid);
  }
  return holders;
}

/** The file's identity, or undefined when it cannot be read (the caller's open says why). */
function statOf(path: string) {
  try {
    return statSync(path, { bigint: true, throwIfNoEntry: false });
  } catch {
    return undefined;
  }
}

/** Whether the file's header says WAL mode (bytes 18 and 19 are 2); other modes keep no -shm. */
function inWalMode(path: string): boolean {
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    const header = Buffer.alloc(20);
    return readSync(fd, header, 0, 20, 0) === 20 && header[18] === 2 && header[19] === 2;
  } catch {
    return false;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** Processes with the database open that hold no lock on the -shm at its path. */
function strangers(path: string): number[] {
  const db = statOf(path);
  if (!db) return [];
  const holders = lockHolders();
  const users = holders?.get(lockKey(db.dev, db.ino));
  if (!holders || !users) return [];
  const shm = statOf(`${path}-shm`);
  const shmUsers = shm ? (holders.get(lockKey(shm.dev, shm.ino)) ?? new Set<number>()) : new Set<number>();
  return [...users].filter((pid) => !shmUsers.has(pid));
}

const pause = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

/**
 * Why the database at path must not be opened now: another process has it open (SQLite
 * holds a lock on a WAL database's file for as long as a connection is open) without
 * holding the -shm file at its path, so its side files were deleted or replaced under
 * it. Opening it would start a second writer on new side files. A process that is just
 * opening the file holds the one lock a moment before the other: only one seen that way
 * over a fifth of a second counts. Linux only (the kernel's lock table); elsewhere, and
 * on file systems whose device numbers the table does not share with stat, nothing is
 * found and nothing is refused.
 */
export function openedElsewhereProblem(path: string): string | undefined {
  if (process.platform !== 'linux' || !inWalMode(path)) return undefined;
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
