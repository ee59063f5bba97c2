// Whether the service's connection to a database file can write. SQLite opens a file it
// may not write read-only without a word (and a WAL database too, when its -wal and -shm
// are there to read), so a start on a read-only file or folder succeeds and only the
// first write would learn it. The same permission check the kernel makes when SQLite
// opens a file for writing tells it at start, before any write.
import { accessSync, constants, existsSync } from 'node:fs';

/** What a client and readiness are told while the database is read-only: retrying does not
 * help; an operator must act. */
export const READ_ONLY =
  "the database is read-only to the service (its file, or its -wal or -shm file, cannot be written): make them writable by the service's user and restart the service";

/** READ_ONLY when a file SQLite writes through (the database, its -wal, its -shm) cannot
 * be written by this process; else undefined. */
export function readOnlyProblem(path: string): string | undefined {
  for (const file of [path, `${path}-wal`, `${path}-shm`]) {
    if (!existsSync(file)) continue;
    try {
      accessSync(file, constants.W_OK);
    } catch (error) {
      if (['EACCES', 'EPERM', 'EROFS'].includes((error as NodeJS.ErrnoException).code ?? '')) return READ_ONLY;
      throw error;
    }
  }
  return undefined;
}
