// stock_adjustments against the events on SQLite: the rows the events give, computed
// again from the log and compared with the stored ones. verify-log reports the first that
// differs (or is missing, or has no event); rebuild-projection puts them right. The table
// is append-only by triggers, so those are dropped for the repair and made again from
// their own definitions, in the caller's transaction: nobody sees the table unguarded or
// half-repaired.
import type { Db } from '../database.ts';
import type { AdjustmentMismatch, AdjustmentRow } from '../../audit-reads.ts';

/** Each QuantitySet with the quantity of the pet's latest PetTracked or QuantitySet
 * before it, by events' (pet_id, version) index: what the write path stores. The
 * migration that made the table fills it with the same statement. */
const EXPECTED_ROWS = `
SELECT e.seq, e.recorded_at, e.pet_id,
       (SELECT json_extract(p.data, '$.quantity') FROM events p
        WHERE p.pet_id = e.pet_id AND p.version < e.version AND p.type IN ('PetTracked', 'QuantitySet')
        ORDER BY p.version DESC LIMIT 1) AS previous_quantity,
       json_extract(e.data, '$.quantity') AS quantity, e.actor, e.request_id
FROM events e
WHERE e.type = 'QuantitySet'`;

const EXPECTED = `CREATE TEMP TABLE adjustments_expected AS ${EXPECTED_ROWS}`;

const COLUMNS = 'seq, recorded_at, pet_id, previous_quantity, quantity, delta, actor, request_id';

/** The seqs whose stored row is not the one the expected rows (the table or subquery
 * named x) give, or has no QuantitySet event. */
const differingFrom = (x: string) => `
SELECT x.seq FROM ${x} x LEFT JOIN stock_adjustments a ON a.seq = x.seq
WHERE a.seq IS NULL OR (a.recorded_at, a.pet_id, a.previous_quantity, a.quantity, a.delta, a.actor, a.request_id)
  IS NOT (x.recorded_at, x.pet_id, x.previous_quantity, x.quantity, x.quantity - x.previous_quantity, x.actor, x.request_id)
UNION ALL
SELECT a.seq FROM stock_adjustments a WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.seq = a.seq AND e.type = 'QuantitySet')`;

/** How many stored rows differ, and the first of them by seq: read-only, in one statement. */
const FIRST_MISMATCH = `
WITH differing AS (${differingFrom(`(${EXPECTED_ROWS})`)})
SELECT count(*) AS count, min(seq) AS seq FROM differing`;

/** The first stored row that differs from the events' (by seq), or undefined when none does. */
export function makeFirstMismatch(db: Db): () => AdjustmentMismatch | undefined {
  const first = db.prepare(FIRST_MISMATCH).safeIntegers(true);
  const stored = db.prepare(`SELECT ${COLUMNS} FROM stock_adjustments WHERE seq = ?`).safeIntegers(true);
  const expected = db
    .prepare(
      `SELECT seq, recorded_at, pet_id, previous_quantity, quantity, quantity - previous_quantity AS delta, actor, request_id
              FROM (${EXPECTED_ROWS} AND e.seq = ?)`,
    )
    .safeIntegers(true);
  return () => {
    const { count, seq } = first.get() as { count: bigint; seq: bigint | null };
    if (seq === null) return undefined;
    const found = stored.get(seq) as AdjustmentRow | undefined;
    const given = expected.get(seq) as AdjustmentRow | undefined;
    return { count: Number(count), ...(found ? { stored: found } : {}), ...(given ? { expected: given } : {}) };
  };
}

/** Returns a function that repairs the table inside the caller's transaction and returns how many rows it put right. */
export function makeAdjustmentsRepair(db: Db): () => number {
  const triggers = db.prepare("SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'stock_adjustments'");
  return () => {
    db.exec('DROP TABLE IF EXISTS temp.adjustments_expected; DROP TABLE IF EXISTS temp.adjustments_differing');
    try {
      db.exec(EXPECTED);
      db.exec('CREATE UNIQUE INDEX temp.adjustments_expected_seq ON adjustments_expected (seq)');
      db.exec(`CREATE TEMP TABLE adjustments_differing AS ${differingFrom('temp.adjustments_expected')}`);
      const differing = db.prepare('SELECT count(*) FROM temp.adjustments_differing').pluck().get() as number;
      if (differing === 0) return 0;
      const guards = triggers.all() as { name: string; sql: string }[];
      for (const { name } of guards) db.exec(`DROP TRIGGER main.${name}`);
      db.exec('DELETE FROM main.stock_adjustments WHERE seq IN (SELECT seq FROM temp.adjustments_differing)');
      db.exec(
        `INSERT INTO main.stock_adjustments (seq, recorded_at, pet_id, previous_quantity, quantity, actor, request_id)
         SELECT * FROM temp.adjustments_expected WHERE seq IN (SELECT seq FROM temp.adjustments_differing) ORDER BY seq`,
      );
      for (const { sql } of guards) db.exec(sql);
      return differing;
    } finally {
      db.exec('DROP TABLE IF EXISTS temp.adjustments_expected; DROP TABLE IF EXISTS temp.adjustments_differing');
    }
  };
}
