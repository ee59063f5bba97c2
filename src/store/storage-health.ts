// Whether the database can take writes. A storage fault on a write (a full disk, a
// read-only file, an I/O error) marks it unwritable; /readyz then probes, at most once
// a second, with a real write that needs new pages, and a successful probe or commit
// marks it writable again: the service recovers by itself once the fault is gone.
import type Database from 'better-sqlite3';
import { sqliteFault } from './sqlite-errors.ts';

export interface StorageHealth {
  /** Call with any error of a write: storage faults mark the database unwritable. */
  failed(error: unknown): void;
  succeeded(): void;
  /** undefined when ready, else why not. */
  problem(): string | undefined;
}

/** The code of a storage fault (not mere contention), else undefined. */
function storageFault(error: unknown): string | undefined {
  const fault = sqliteFault(error);
  return fault?.kind === 'storage' ? fault.code : undefined;
}

export function makeStorageHealth(db: Database.Database, deps: { now: () => number; probeEveryMs?: number }): StorageHealth {
  const probeEveryMs = deps.probeEveryMs ?? 1000;
  const ping = db.prepare('SELECT 1').pluck();
  const grow = db.prepare('INSERT INTO service_health (id, padding) VALUES (1, zeroblob(16384))');
  const shrink = db.prepare('DELETE FROM service_health WHERE id = 1');
  const probe = db.transaction(() => {
    grow.run();
    shrink.run();
  });
  let fault: string | undefined;
  let lastProbe = -Infinity;
  return {
    failed(error) {
      fault = storageFault(error) ?? fault;
    },
    succeeded() {
      fault = undefined;
    },
    problem() {
      try {
        ping.get();
      } catch (error) {
        return `the database does not answer (${storageFault(error) ?? 'error'})`;
      }
      if (fault && deps.now() - lastProbe >= probeEveryMs) {
        lastProbe = deps.now();
        try {
          probe.immediate();
          fault = undefined;
        } catch (error) {
          fault = storageFault(error) ?? fault;
        }
      }
      return fault && `the database cannot take writes (${fault})`;
    },
  };
}
