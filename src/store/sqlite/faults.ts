// What a SQLite error means for a client: contention (another writer held the lock too
// long) or a storage fault (a full disk, a read-only or broken file). Both are "not
// now" (503) rather than "broken" (500); a storage fault also makes the service unready
// until writing works again (storage-health.ts). Causes are followed, so an error
// wrapped in CommitFailed is classified by what made the commit fail.
const CONTENTION = /^SQLITE_(BUSY|LOCKED)/;
const STORAGE = /^SQLITE_(FULL|READONLY|IOERR|CANTOPEN|CORRUPT|NOTADB|PERM|PROTOCOL|NOLFS)/;

import type { StorageFault } from '../health.ts';
import { READ_ONLY } from './reads/read-only.ts';

/** The codes of a file this process may not write: no retry helps. */
const READ_ONLY_CODES = ['SQLITE_READONLY', 'SQLITE_READONLY_DIRECTORY'];

export function sqliteFault(error: unknown): StorageFault | undefined {
  for (let e = error as { code?: unknown; cause?: unknown } | undefined; e; e = e.cause as typeof e) {
    if (typeof e.code !== 'string') continue;
    if (CONTENTION.test(e.code)) return { kind: 'contention', code: e.code };
    if (READ_ONLY_CODES.includes(e.code)) return { kind: 'storage', code: e.code, advice: READ_ONLY };
    if (STORAGE.test(e.code)) return { kind: 'storage', code: e.code };
  }
  return undefined;
}
