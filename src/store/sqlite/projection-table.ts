// The `inventory` table behind GET /v1/inventory. Only this module writes it, and only
// with rows that applyEvent made (the batch planner's, or a replay's).
import type { Db } from '../database.ts';
import type { PetStatus } from '../../domain/events.ts';
import type { Entry } from '../projection.ts';

const COLUMNS = 'pet_id, quantity, status, version, updated_at';

type Row = [petId: bigint, quantity: bigint, status: string, version: bigint, updatedAt: string];

function toEntry([petId, quantity, status, version, updatedAt]: Row): Entry {
  return { petId, quantity: Number(quantity), status: status as PetStatus, version: Number(version), updatedAt };
}

export interface ProjectionTable {
  get(petId: bigint): Entry | undefined;
  list(): Entry[];
  /** Writes an entry's row (applyEvent's result). */
  put(entry: Entry): void;
  /** Writes a shadow table with exactly these entries and swaps it in: call inside a
   * transaction, so that readers never see it half-built. */
  replaceAll(entries: Iterable<Entry>): void;
}

export function makeProjectionTable(db: Db, table = 'inventory'): ProjectionTable {
  // safeIntegers: pet ids above 2^53 come back exact, as BigInt.
  const get = db.prepare(`SELECT ${COLUMNS} FROM ${table} WHERE pet_id = ?`).safeIntegers(true).raw();
  const list = db.prepare(`SELECT ${COLUMNS} FROM ${table} ORDER BY pet_id`).safeIntegers(true).raw();
  const upsert = db.prepare(
    `INSERT INTO ${table} (${COLUMNS}) VALUES (@petId, @quantity, @status, @version, @updatedAt)
     ON CONFLICT (pet_id) DO UPDATE SET quantity = excluded.quantity, status = excluded.status,
       version = excluded.version, updated_at = excluded.updated_at`,
  );
  const shadow = `${table}_rebuild`;
  const schemaOf = db.prepare("SELECT sql FROM sqlite_master WHERE tbl_name = ? AND sql IS NOT NULL ORDER BY type = 'index'").pluck();
  return {
    get(petId) {
      const row = get.get(petId) as Row | undefined;
      return row && toEntry(row);
    },
    list: () => (list.all() as Row[]).map(toEntry),
    put: (entry) => void upsert.run(entry),
    replaceAll(entries) {
      // The shadow gets the table's own definition (constraints and indexes included),
      // as the migrations left it.
      const [tableSql, ...indexSql] = schemaOf.all(table) as string[];
      db.exec(`DROP TABLE IF EXISTS ${shadow}`);
      db.exec(tableSql!.replace(/^CREATE TABLE\s+"?\w+"?/i, `CREATE TABLE ${shadow}`));
      const insert = db.prepare(`INSERT INTO ${shadow} (${COLUMNS}) VALUES (@petId, @quantity, @status, @version, @updatedAt)`);
      for (const entry of entries) insert.run(entry);
      db.exec(`DROP TABLE ${table}`);
      db.exec(`ALTER TABLE ${shadow} RENAME TO ${table}`);
      for (const sql of indexSql) db.exec(sql);
    },
  };
}
