// The projection: the `inventory` table that backs GET /v1/inventory. Only this module
// writes it. applyEvent is the one rule that turns an event into a row; the live write
// path and the replay both use it, so they cannot drift apart.
import type Database from 'better-sqlite3';
import { evolve } from '../domain/evolve.ts';
import type { EntryState, PetStatus, RecordedEvent } from '../domain/events.ts';

export interface Entry extends EntryState {
  petId: bigint;
  updatedAt: string;
}

export function applyEvent(entry: Entry | undefined, event: RecordedEvent): Entry {
  const state = evolve(entry, event);
  if (state.version !== event.version) {
    throw new Error(`event ${event.seq} has version ${event.version}, the entry expects ${state.version}`);
  }
  return { petId: event.petId, ...state, updatedAt: event.recordedAt };
}

interface Row {
  pet_id: bigint;
  quantity: bigint;
  status: string;
  version: bigint;
  updated_at: string;
}

function toEntry(row: Row): Entry {
  return {
    petId: row.pet_id,
    quantity: Number(row.quantity),
    status: row.status as PetStatus,
    version: Number(row.version),
    updatedAt: row.updated_at,
  };
}

export interface Projection {
  get(petId: bigint): Entry | undefined;
  /** Every entry, by petId ascending. */
  list(): Entry[];
  /** Applies an event to its entry and writes the result. */
  apply(entry: Entry | undefined, event: RecordedEvent): Entry;
  write(entry: Entry): void;
  /** Replaces every row with these entries (call inside a transaction). */
  replaceAll(entries: Entry[]): void;
}

export function makeProjection(db: Database.Database, table = 'inventory'): Projection {
  const columns = 'pet_id, quantity, status, version, updated_at';
  // safeIntegers: pet ids above 2^53 come back exact, as BigInt.
  const get = db.prepare(`SELECT ${columns} FROM ${table} WHERE pet_id = ?`).safeIntegers(true);
  const list = db.prepare(`SELECT ${columns} FROM ${table} ORDER BY pet_id`).safeIntegers(true);
  const upsert = db.prepare(
    `INSERT INTO ${table} (${columns}) VALUES (@petId, @quantity, @status, @version, @updatedAt)
     ON CONFLICT (pet_id) DO UPDATE SET quantity = excluded.quantity, status = excluded.status,
       version = excluded.version, updated_at = excluded.updated_at`,
  );
  const clear = db.prepare(`DELETE FROM ${table}`);
  const write = (entry: Entry): void => {
    upsert.run(entry);
  };
  return {
    get(petId) {
      const row = get.get(petId) as Row | undefined;
      return row && toEntry(row);
    },
    list() {
      return (list.all() as Row[]).map(toEntry);
    },
    apply(entry, event) {
      const next = applyEvent(entry, event);
      write(next);
      return next;
    },
    write,
    replaceAll(entries) {
      clear.run();
      for (const entry of entries) write(entry);
    },
  };
}
