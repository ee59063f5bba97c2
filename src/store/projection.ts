// The projection: the `inventory` table that backs GET /v1/inventory. Only this module
// writes it. applyEvent is the one rule that turns an event into a row; the live write
// path and the replay both use it, so they cannot drift apart.
import type Database from 'better-sqlite3';
import { evolve } from '../domain/evolve.ts';
import { makeChangeToken } from './database.ts';
import type { AppliedEvent, EntryState, PetStatus } from '../domain/events.ts';

export interface Entry extends EntryState {
  petId: bigint;
  updatedAt: string;
}

export function applyEvent(entry: Entry | undefined, event: AppliedEvent): Entry {
  const state = evolve(entry, event);
  if (state.version !== event.version) {
    throw new Error(`event ${event.seq} has version ${event.version}, the entry expects ${state.version}`);
  }
  return { petId: event.petId, quantity: state.quantity, status: state.status, version: state.version, updatedAt: event.recordedAt };
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
  /** Every entry as [petId, quantity, status, version], by petId, one row at a time. */
  rows(): IterableIterator<[bigint, number, PetStatus, number]>;
  /** Changes whenever the database may have changed (see makeChangeToken). */
  changeToken(): string;
  /** Applies an event to its entry and writes the result. */
  apply(entry: Entry | undefined, event: AppliedEvent): Entry;
  /**
   * Replaces the table with one holding exactly these entries: writes a shadow table and
   * swaps it in. Call inside a transaction, so that readers never see it half-built.
   */
  replaceAll(entries: Iterable<Entry>): void;
}

export function makeProjection(db: Database.Database, table = 'inventory'): Projection {
  const columns = 'pet_id, quantity, status, version, updated_at';
  // safeIntegers: pet ids above 2^53 come back exact, as BigInt.
  const get = db.prepare(`SELECT ${columns} FROM ${table} WHERE pet_id = ?`).safeIntegers(true);
  const list = db.prepare(`SELECT ${columns} FROM ${table} ORDER BY pet_id`).safeIntegers(true);
  const rows = db.prepare(`SELECT pet_id, quantity, status, version FROM ${table} ORDER BY pet_id`).safeIntegers(true).raw();
  const changeToken = makeChangeToken(db);
  const upsert = db.prepare(
    `INSERT INTO ${table} (${columns}) VALUES (@petId, @quantity, @status, @version, @updatedAt)
     ON CONFLICT (pet_id) DO UPDATE SET quantity = excluded.quantity, status = excluded.status,
       version = excluded.version, updated_at = excluded.updated_at`,
  );
  const shadow = `${table}_rebuild`;
  const schemaOf = db.prepare("SELECT sql FROM sqlite_master WHERE tbl_name = ? AND sql IS NOT NULL ORDER BY type = 'index'").pluck();
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
    *rows() {
      for (const [petId, quantity, status, version] of rows.iterate() as IterableIterator<[bigint, bigint, PetStatus, bigint]>) {
        yield [petId, Number(quantity), status, Number(version)];
      }
    },
    changeToken,
    apply(entry, event) {
      const next = applyEvent(entry, event);
      write(next);
      return next;
    },
    replaceAll(entries) {
      // The shadow gets the table's own definition (constraints and indexes included),
      // as the migrations left it.
      const [tableSql, ...indexSql] = schemaOf.all(table) as string[];
      db.exec(`DROP TABLE IF EXISTS ${shadow}`);
      db.exec(tableSql!.replace(/^CREATE TABLE\s+"?\w+"?/i, `CREATE TABLE ${shadow}`));
      const insert = db.prepare(`INSERT INTO ${shadow} (${columns}) VALUES (@petId, @quantity, @status, @version, @updatedAt)`);
      for (const entry of entries) insert.run(entry);
      db.exec(`DROP TABLE ${table}`);
      db.exec(`ALTER TABLE ${shadow} RENAME TO ${table}`);
      for (const sql of indexSql) db.exec(sql);
    },
  };
}
