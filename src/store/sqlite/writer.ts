// Everything that writes, on one connection: the operations the worker thread runs for
// the service (worker.ts), or that run in place for an operator command or a test.
// Arguments and results are plain data (structured-cloneable), so the same functions
// serve both.
import type { Db } from '../database.ts';
import type { Revocation } from '../keys.ts';
import type { Appended, BatchOptions, Entry, Outcome, ReplayRow, Submission } from '../port.ts';
import { applyEvent } from '../projection.ts';
import { toAppliedEvent } from '../replay-rows.ts';
import { makeEventWriter } from './append-batch.ts';
import { makeKeyWriter } from './key-table.ts';
import { makeProjectionTable } from './projection-table.ts';

export interface Writer {
  appendBatch(submissions: readonly Submission[], options?: BatchOptions): Outcome<Appended[]>[];
  createKey(name: string, createdBy: string, at: string): string;
  createFirstKey(name: string, createdBy: string, at: string): string | undefined;
  revokeKey(name: string, revokedBy: string, at: string): Revocation;
  probeWrite(): void;
  replaceProjection(entries: Map<bigint, Entry>, after: number): { caughtUp: number; before: Entry[]; entries: Map<bigint, Entry> };
}

export function makeWriter(db: Db): Writer {
  const projection = makeProjectionTable(db);
  const events = makeEventWriter(db, projection);
  const keys = makeKeyWriter(db);
  // The readiness probe writes a row that needs new pages, and deletes it again.
  const grow = db.prepare('INSERT INTO service_health (id, padding) VALUES (1, zeroblob(16384))');
  const shrink = db.prepare('DELETE FROM service_health WHERE id = 1');
  const probe = db.transaction(() => {
    grow.run();
    shrink.run();
  });
  const since = db
    .prepare('SELECT seq, pet_id, version, type, data, recorded_at FROM events WHERE seq > ? ORDER BY seq')
    .safeIntegers(true)
    .raw();
  const swap = db.transaction((entries: Map<bigint, Entry>, after: number) => {
    let caughtUp = 0;
    for (const row of since.iterate(after) as IterableIterator<ReplayRow>) {
      const event = toAppliedEvent(row);
      entries.set(event.petId, applyEvent(entries.get(event.petId), event));
      caughtUp++;
    }
    const before = projection.list();
    projection.replaceAll(entries.values());
    return { caughtUp, before, entries };
  });
  return {
    appendBatch: events.appendBatch,
    createKey: keys.create,
    createFirstKey: keys.createFirst,
    revokeKey: keys.revoke,
    probeWrite: () => probe.immediate(),
    replaceProjection: (entries, after) => swap.immediate(entries, after),
  };
}
