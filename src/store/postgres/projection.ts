// The inventory table on PostgreSQL: the one module that writes it. A batch's entries
// are written by upsertEntries (within the batch's statement), a copy's by the same, and
// rebuild-projection swaps in a shadow table built here.
//
// rebuild-projection on PostgreSQL: a shadow table built and swapped in, as on SQLite, so
// that the instances' writers wait on the rebuild only for the swap, never for the
// rebuild's size. In two steps:
// 1. No lock on the chain head: the replayed entries go into inventory_rebuild (the
//    table's own definition, constraints and indexes), and the shadow is compared with
//    the live table. Writers keep appending meanwhile.
// 2. Holding the chain head (writers wait): the events appended since the snapshot are
//    applied to the shadow, the pets they touched are compared again, and the shadow is
//    renamed into place with the live table's owner and grants. Its cost is that of the
//    events appended meanwhile, not of the projection's size; stock_adjustments is
//    compared with the log and put right here too (adjustment-checks.ts), which reads
//    the whole log while writers wait.
// Only events change the projection, and only while holding the head: a pet that no
// event touched after the snapshot has the same live row at step 2 as at step 1.
import type pg from 'pg';
import { applyEvent, type Entry } from '../../domain/apply-event.ts';
import { toLoggedEvent } from '../replay-rows.ts';
import { inTransaction } from './transactions.ts';
import { repairAdjustments } from './adjustment-checks.ts';
import { replayPages } from './reads.ts';

const SHADOW = 'inventory_rebuild';
const REPLACED = 'inventory_replaced';
const INSERT_CHUNK = 10_000;
const COLUMNS = 'pet_id, quantity, status, version, updated_at';

/** The live rows that differ from the shadow's (of these pets only, if given): absent ones are null. */
const DIFFERING = (pets: string) => `
SELECT i.pet_id, i.quantity, i.status, i.version, i.updated_at, s.pet_id AS shadow_pet_id
FROM inventory i FULL JOIN ${SHADOW} s ON s.pet_id = i.pet_id
WHERE (i.pet_id, i.quantity, i.status, i.version, i.updated_at) IS DISTINCT FROM (s.pet_id, s.quantity, s.status, s.version, s.updated_at)
  ${pets}`;

// The shadow gets the live table's owner (when a superuser rebuilds) and every grant on it
// (the service's role must keep reading and writing it), in one round trip.
const TAKE_OWNER_AND_GRANTS = `
DO $$
DECLARE
  g record;
BEGIN
  IF (SELECT relowner FROM pg_class WHERE oid = 'inventory'::regclass) <> (SELECT relowner FROM pg_class WHERE oid = '${SHADOW}'::regclass) THEN
    EXECUTE format('ALTER TABLE ${SHADOW} OWNER TO %I', (SELECT pg_get_userbyid(relowner) FROM pg_class WHERE oid = 'inventory'::regclass));
  END IF;
  FOR g IN
    SELECT a.privilege_type, a.is_grantable, CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(a.grantee)) END AS who
    FROM pg_class c, aclexplode(c.relacl) a
    WHERE c.oid = 'inventory'::regclass AND a.grantee <> c.relowner
  LOOP
    EXECUTE format('GRANT %s ON ${SHADOW} TO %s%s', g.privilege_type, g.who, CASE WHEN g.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
  END LOOP;
END $$`;

// The shadow's indexes (its primary key's included) take the live ones' names once those are gone.
const RENAME_INDEXES = `
DO $$
DECLARE
  i record;
BEGIN
  FOR i IN SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND tablename = 'inventory' AND indexname LIKE '${SHADOW}%' LOOP
    EXECUTE format('ALTER INDEX %I RENAME TO %I', i.indexname, 'inventory' || substr(i.indexname, length('${SHADOW}') + 1));
  END LOOP;
END $$`;

interface LiveRow {
  pet_id: bigint | null;
  quantity: number;
  status: Entry['status'];
  version: number;
  updated_at: string;
  shadow_pet_id: bigint | null;
}

/** The live rows of the pets whose entries differ, by pet (null: no live row). */
function liveRows(rows: LiveRow[]): Map<bigint, Entry | null> {
  const differing = new Map<bigint, Entry | null>();
  for (const r of rows) {
    if (r.pet_id === null) differing.set(r.shadow_pet_id!, null);
    else differing.set(r.pet_id, { petId: r.pet_id, quantity: r.quantity, status: r.status, version: r.version, updatedAt: r.updated_at });
  }
  return differing;
}

/**
 * A statement that writes entries' rows (applyEvent's results) into table, from five
 * array parameters starting at $first (entryColumns gives them).
 */
export function upsertEntries(first: number, table = 'inventory'): string {
  const $ = (i: number) => `$${first + i}`;
  return `INSERT INTO ${table} (${COLUMNS})
  SELECT * FROM unnest(${$(0)}::bigint[], ${$(1)}::integer[], ${$(2)}::text[], ${$(3)}::integer[], ${$(4)}::text[])
  ON CONFLICT (pet_id) DO UPDATE SET quantity = excluded.quantity, status = excluded.status,
    version = excluded.version, updated_at = excluded.updated_at`;
}

/** upsertEntries' parameters. */
export function entryColumns(entries: readonly Entry[]): unknown[] {
  return [
    entries.map((e) => String(e.petId)),
    entries.map((e) => e.quantity),
    entries.map((e) => e.status),
    entries.map((e) => e.version),
    entries.map((e) => e.updatedAt),
  ];
}

/** Writes entries into table (the live one for a copy, the shadow for a rebuild), in chunks. */
export async function writeEntries(client: pg.ClientBase, entries: Iterable<Entry>, table = 'inventory'): Promise<void> {
  const all = [...entries];
  for (let i = 0; i < all.length; i += INSERT_CHUNK)
    await client.query(upsertEntries(1, table), entryColumns(all.slice(i, i + INSERT_CHUNK)));
}

function writeShadow(client: pg.ClientBase, entries: Iterable<Entry>): Promise<void> {
  return writeEntries(client, entries, SHADOW);
}

interface SwapDeps {
  pool: pg.Pool;
  /** BEGIN and lock the chain head. */
  beginLocked: string;
  /** Runs last in the locked transaction: mark the change for the instances. */
  announce: (client: pg.ClientBase) => Promise<void>;
}

export async function swapProjection(
  { pool, beginLocked, announce }: SwapDeps,
  entries: Map<bigint, Entry>,
  after: number,
): Promise<{ caughtUp: number; adjustments: number; before: Entry[]; entries: Map<bigint, Entry> }> {
  // Step 1, committed: a shadow left by a failed step 2 is dropped by the next rebuild.
  const differing = await inTransaction(pool, 'BEGIN', async (client) => {
    await client.query(`DROP TABLE IF EXISTS ${SHADOW}`);
    await client.query(`CREATE TABLE ${SHADOW} (LIKE inventory INCLUDING ALL)`);
    await writeShadow(client, entries.values());
    return liveRows((await client.query<LiveRow>(DIFFERING(''))).rows);
  });

  return inTransaction(pool, beginLocked, async (client) => {
    const touched = new Map<bigint, Entry>();
    let caughtUp = 0;
    for await (const rows of replayPages(client, { after })) {
      for (const row of rows) {
        const event = toLoggedEvent(row);
        const entry = applyEvent(entries.get(event.petId), event);
        entries.set(event.petId, entry);
        touched.set(event.petId, entry);
        caughtUp++;
      }
    }
    if (touched.size > 0) {
      await writeShadow(client, touched.values());
      const pets = [...touched.keys()].map(String);
      for (const pet of touched.keys()) differing.delete(pet);
      const again = await client.query<LiveRow>(DIFFERING('AND coalesce(i.pet_id, s.pet_id) = ANY($1::bigint[])'), [pets]);
      for (const [pet, row] of liveRows(again.rows)) differing.set(pet, row);
    }
    const adjustments = await repairAdjustments(client);
    await client.query(TAKE_OWNER_AND_GRANTS);
    await client.query(
      `ALTER TABLE inventory RENAME TO ${REPLACED}; ALTER TABLE ${SHADOW} RENAME TO inventory; DROP TABLE ${REPLACED}; ${RENAME_INDEXES}`,
    );
    await announce(client);
    // The live table as it was: equal to the new entries but where they differed.
    const before: Entry[] = [];
    for (const [pet, entry] of entries) if (!differing.has(pet)) before.push(entry);
    for (const row of differing.values()) if (row) before.push(row);
    return { caughtUp, adjustments, before, entries };
  });
}
