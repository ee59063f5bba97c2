// An online copy of a SQLite database: VACUUM INTO, from a read-only connection. The copy
// is one read transaction's snapshot, so it is consistent (every commit before it, none
// after); in WAL mode that read transaction never blocks the service's writes, which go on
// while the copy is made (the log only grows until it ends). The backup API
// (sqlite3_backup) was the other choice: copied in steps, it starts again whenever another
// process writes in between, which under steady write load may be forever.
import { closeSync, fsyncSync, openSync, rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { openDatabase } from './database.ts';

/**
 * Copies the database at `source` to `out`, a file that must not exist yet: created empty
 * with mode 0600 first (the copy holds key hashes and the audit trail, and is never
 * readable by others, not even for a moment), then filled and synced to disk. On any
 * failure the partial copy is removed.
 */
export function backupSqlite(source: string, out: string): void {
  // 'wx': refuses an existing file, so a backup never overwrites anything.
  try {
    closeSync(openSync(out, 'wx', 0o600));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') {
      throw new Error(`${out} already exists: a backup never overwrites a file; name a new one`, { cause: error });
    }
    throw error;
  }
  try {
    const db = openDatabase(source, { readonly: true });
    try {
      db.prepare('VACUUM INTO ?').run(out);
    } finally {
      db.close();
    }
    syncToDisk(out);
    syncToDisk(dirname(out));
  } catch (error) {
    rmSync(out, { force: true });
    throw error;
  }
}

function syncToDisk(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
