// Whether the database path, and the write-ahead log and shared-memory file beside it,
// still name the files we opened. A connection keeps writing to its open files after
// `rm inventory.db*` or after another file was moved to a path: commits would succeed
// into a file nobody will ever open again. And with only the -wal and -shm deleted, the
// next process to open the database makes new ones and takes the write lock in them,
// unaware of ours: two writers, each checkpointing its own log into one file, destroy
// it. Comparing each path's device and inode with those recorded at opening notices all
// of these (a missing path too); a stat takes microseconds, so every batch can afford
// three.
import { statSync, type BigIntStats } from 'node:fs';

interface FileIdentity {
  /** undefined while the paths name the opened files, else why not. */
  problem(): string | undefined;
  /** The database file is still the one opened, but its -wal or -shm is not. */
  sideFilesLost(): boolean;
}

const SIDE_FILES = [
  { suffix: '-wal', what: 'write-ahead log' },
  { suffix: '-shm', what: 'shared-memory file' },
] as const;

type Checked = BigIntStats | undefined | 'unreadable';

function stat(path: string): Checked {
  try {
    return statSync(path, { bigint: true, throwIfNoEntry: false });
  } catch {
    return 'unreadable';
  }
}

const same = (a: BigIntStats, b: Checked) => b !== undefined && b !== 'unreadable' && a.dev === b.dev && a.ino === b.ino;

export function recordFileIdentity(path: string): FileIdentity {
  const opened = statSync(path, { bigint: true });
  // A side file that does not exist yet (SQLite makes the log at the first transaction)
  // is recorded when it is first seen.
  const sides = SIDE_FILES.map((side) => {
    const now = stat(`${path}${side.suffix}`);
    return { ...side, opened: now === 'unreadable' ? undefined : now };
  });
  const lostSide = (): string | undefined => {
    for (const side of sides) {
      const now = stat(`${path}${side.suffix}`);
      if (side.opened === undefined) {
        if (now !== undefined && now !== 'unreadable') side.opened = now;
        continue;
      }
      if (now === 'unreadable') return `the database's ${side.what} (${side.suffix}) cannot be checked`;
      if (now === undefined) return `the database's ${side.what} (${side.suffix}) was deleted while the service had it open`;
      if (!same(side.opened, now))
        return `the database's ${side.what} (${side.suffix}) was replaced by another file while the service had it open`;
    }
    return undefined;
  };
  const main = (): string | undefined => {
    const now = stat(path);
    if (now === 'unreadable') return 'the database file cannot be checked';
    if (!now) return 'the database file was deleted while the service had it open; restore it and restart the service';
    if (!same(opened, now)) return 'the database file was replaced by another file while the service had it open; restart the service';
    return undefined;
  };
  return {
    problem() {
      const side = main() ?? lostSide();
      return side && !side.startsWith('the database file') ? `${side}: writes are refused; restart the service` : side;
    },
    sideFilesLost: () => main() === undefined && lostSide() !== undefined,
  };
}
