// Whether the database path still names the file we opened. A connection keeps writing
// to its open file after `rm inventory.db*` or after another file was moved to the
// path: commits would succeed into a file nobody will ever open again. Comparing the
// path's device and inode with those recorded at opening notices both (a missing path
// too); a stat takes microseconds, so every batch can afford one.
import { statSync } from 'node:fs';

export interface FileIdentity {
  /** undefined while the path names the opened file, else why not. */
  problem(): string | undefined;
}

export function recordFileIdentity(path: string): FileIdentity {
  const opened = statSync(path, { bigint: true });
  return {
    problem() {
      let now;
      try {
        now = statSync(path, { bigint: true, throwIfNoEntry: false });
      } catch (error) {
        return `the database file cannot be checked (${(error as NodeJS.ErrnoException).code ?? 'error'})`;
      }
      if (!now) return 'the database file was deleted while the service had it open; restore it and restart the service';
      if (now.dev !== opened.dev || now.ino !== opened.ino) {
        return 'the database file was replaced by another file while the service had it open; restart the service';
      }
      return undefined;
    },
  };
}
