// Keeps the write-ahead log small. A reader's open transaction (an auditor's sqlite3
// shell, a listing piped into a slow pager) pins the log: no checkpoint can copy back
// the frames written after its snapshot, so the log grows with every write, and
// SQLite cuts it back (journal_size_limit) only at a later write once a checkpoint
// emptied it. If writes stop, nothing would. So the writer thread, whenever it is idle
// (no operation queued), checkpoints a log that is not empty: PASSIVE, which never
// waits; and once everything is copied back and the log is above the limit, TRUNCATE
// with a busy wait of a few milliseconds, which empties the file unless a reader still
// reads in it. It also records since when checkpoints have been held back: SQLite does
// not tell which connection of which process reads, so that age is the truthful stand-in
// for the age of the oldest reader.
import { statSync } from 'node:fs';
import type { Db } from './database.ts';

/** Shared between the writer thread and the event loop (a SharedArrayBuffer). */
interface WalShared {
  /** [0]: operations sent to the writer thread and not yet answered. */
  queued: Int32Array;
  /** [0]: Date.now() since checkpoints have been held back, 0 when they are not. */
  blockedSince: Float64Array;
  /** [0]: what the writer thread did with its log once its side files were lost (side-files.ts Rescue). */
  rescue: Int32Array;
}

export function walShared(buffer = new SharedArrayBuffer(24)): WalShared & { buffer: SharedArrayBuffer } {
  return {
    buffer,
    queued: new Int32Array(buffer, 0, 1),
    blockedSince: new Float64Array(buffer, 8, 1),
    rescue: new Int32Array(buffer, 16, 1),
  };
}

export function walBytes(dbPath: string): number {
  return statSync(`${dbPath}-wal`, { throwIfNoEntry: false })?.size ?? 0;
}

interface CheckpointResult {
  busy: number;
  log: number;
  checkpointed: number;
}

const TRUNCATE_WAIT_MS = 20;

export function makeWalKeeper(db: Db, dbPath: string, limitBytes: number, shared: WalShared, now: () => number = Date.now) {
  const blocked = (yes: boolean) => {
    if (!yes) shared.blockedSince[0] = 0;
    else if (shared.blockedSince[0] === 0) shared.blockedSince[0] = now();
  };
  const checkpoint = (mode: 'PASSIVE' | 'TRUNCATE'): CheckpointResult => (db.pragma(`wal_checkpoint(${mode})`) as CheckpointResult[])[0]!;
  return {
    /** Call only while no operation is queued: it may hold the write lock for a moment. */
    idle(): void {
      const size = walBytes(dbPath);
      if (size === 0) return blocked(false);
      try {
        const passive = checkpoint('PASSIVE');
        if (passive.busy !== 0 || passive.checkpointed < passive.log) return blocked(true);
        if (size <= limitBytes) return blocked(false);
        const busyTimeout = db.pragma('busy_timeout', { simple: true }) as number;
        db.pragma(`busy_timeout = ${TRUNCATE_WAIT_MS}`);
        try {
          blocked(checkpoint('TRUNCATE').busy !== 0);
        } finally {
          db.pragma(`busy_timeout = ${busyTimeout}`);
        }
      } catch (error) {
        // Another process's writer or checkpoint holds the lock: try again next time.
        if (!/^SQLITE_(BUSY|LOCKED)/.test(String((error as { code?: unknown }).code))) throw error;
        blocked(true);
      }
    },
  };
}
