// Replays the whole event log through the same applyEvent as the live write path, and
// compares the result with the projection; unless only checking, replaces the
// projection with it. Runs in one IMMEDIATE transaction: no write lands between the
// replay and the replacement, and readers see the old projection until the commit.
import type Database from 'better-sqlite3';
import type { RecordedEvent } from './domain/events.ts';
import { makeEventStore } from './store/event-store.ts';
import { applyEvent, makeProjection, type Entry } from './store/projection.ts';

export interface Difference {
  petId: bigint;
  /** The projection's row; undefined when the projection lacks the entry. */
  before?: Entry;
  /** The replayed entry; undefined when no event makes this entry. */
  after?: Entry;
}

export interface RebuildReport {
  eventsReplayed: number;
  entries: number;
  differences: Difference[];
  /** False for --check: nothing was written. */
  written: boolean;
}

export function replay(events: Iterable<RecordedEvent>): { entries: Map<bigint, Entry>; count: number } {
  const entries = new Map<bigint, Entry>();
  let count = 0;
  for (const event of events) {
    entries.set(event.petId, applyEvent(entries.get(event.petId), event));
    count++;
  }
  return { entries, count };
}

function same(a: Entry, b: Entry): boolean {
  return a.quantity === b.quantity && a.status === b.status && a.version === b.version && a.updatedAt === b.updatedAt;
}

export function compare(current: Entry[], replayed: Map<bigint, Entry>): Difference[] {
  const differences: Difference[] = [];
  const seen = new Set<bigint>();
  for (const before of current) {
    seen.add(before.petId);
    const after = replayed.get(before.petId);
    if (!after || !same(before, after)) differences.push(after ? { petId: before.petId, before, after } : { petId: before.petId, before });
  }
  for (const [petId, after] of replayed) if (!seen.has(petId)) differences.push({ petId, after });
  return differences.sort((a, b) => (a.petId < b.petId ? -1 : a.petId > b.petId ? 1 : 0));
}

export function rebuildProjection(db: Database.Database, options: { check: boolean }): RebuildReport {
  const projection = makeProjection(db);
  const store = makeEventStore(db, { projection, now: Date.now });
  const rebuild = db.transaction(() => {
    const { entries, count } = replay(store.readAll());
    const differences = compare(projection.list(), entries);
    if (!options.check) projection.replaceAll([...entries.values()]);
    return { eventsReplayed: count, entries: entries.size, differences, written: !options.check };
  });
  return options.check ? rebuild.deferred() : rebuild.immediate();
}
