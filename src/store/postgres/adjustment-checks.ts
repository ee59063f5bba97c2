// stock_adjustments against the events on PostgreSQL, as on SQLite: the rows the events
// give, computed again from the log and compared with the stored ones. verify-log reports
// the first that differs (or is missing, or has no event); rebuild-projection puts them
// right with the table's append-only triggers disabled for the repair alone, in its
// transaction (which holds the chain head): nobody sees the table unguarded or
// half-repaired.
import type pg from 'pg';
import type { AdjustmentMismatch, AdjustmentRow } from '../audit-reads.ts';

/** Each QuantitySet with the quantity of the pet's PetTracked or QuantitySet before it,
 * by version: what the write path stores. The migration that made the table fills it
 * with the same query. */
const EXPECTED_ROWS = `
SELECT seq, recorded_at, pet_id, previous_quantity, quantity, actor, request_id
FROM (
  SELECT seq, recorded_at, pet_id, type, actor, request_id,
         (data::jsonb ->> 'quantity')::bigint AS quantity,
         lag((data::jsonb ->> 'quantity')::bigint) OVER (PARTITION BY pet_id ORDER BY version) AS previous_quantity
  FROM events
  WHERE type IN ('PetTracked', 'QuantitySet')
) AS e
WHERE type = 'QuantitySet'`;

const EXPECTED = `CREATE TEMPORARY TABLE adjustments_expected ON COMMIT DROP AS ${EXPECTED_ROWS}`;

/** The seqs whose stored row is not the one the expected rows (the table x) give, or has none. */
const differingFrom = (x: string) => `
SELECT coalesce(x.seq, a.seq) AS seq
FROM ${x} x FULL JOIN stock_adjustments a ON a.seq = x.seq
WHERE (x.recorded_at, x.pet_id, x.previous_quantity, x.quantity, x.quantity - x.previous_quantity, x.actor, x.request_id)
  IS DISTINCT FROM (a.recorded_at, a.pet_id, a.previous_quantity, a.quantity, a.delta, a.actor, a.request_id)`;

/** A row as JSON, its integers as text (exact, as BigInt would hold them). */
const asJson = (t: string, delta: string) =>
  `json_build_object('seq', ${t}.seq::text, 'recorded_at', ${t}.recorded_at, 'pet_id', ${t}.pet_id::text, ` +
  `'previous_quantity', ${t}.previous_quantity::text, 'quantity', ${t}.quantity::text, 'delta', (${delta})::text, ` +
  `'actor', ${t}.actor, 'request_id', ${t}.request_id)`;

/** The rows that differ, the first of them as stored and as the events give it, in one
 * read-only statement. */
const FIRST_MISMATCH = `
WITH x AS (${EXPECTED_ROWS}),
differing AS (${differingFrom('x')}),
first AS (SELECT count(*) AS count, min(seq) AS seq FROM differing)
SELECT first.count::integer AS count,
       (SELECT ${asJson('a', 'a.delta')} FROM stock_adjustments a WHERE a.seq = first.seq) AS stored,
       (SELECT ${asJson('x', 'x.quantity - x.previous_quantity')} FROM x WHERE x.seq = first.seq) AS expected
FROM first WHERE first.seq IS NOT NULL`;

/** The comparison reads the whole log in one statement, which takes as long as the log
 * is long (tens of seconds at a million events on a busy server): it is given longer
 * than the pool's bound for a statement, which is meant for the service's short ones. */
const WHOLE_LOG_TIMEOUT_MS = 30 * 60_000;

/** The stored rows that differ from the events', or undefined when none does. */
export async function adjustmentMismatch(pool: pg.Pool): Promise<AdjustmentMismatch | undefined> {
  const { rows } = await pool.query<{ count: number; stored: AdjustmentRow | null; expected: AdjustmentRow | null }>({
    text: FIRST_MISMATCH,
    query_timeout: WHOLE_LOG_TIMEOUT_MS,
  } as pg.QueryConfig);
  const row = rows[0];
  if (!row) return undefined;
  return { count: row.count, ...(row.stored ? { stored: row.stored } : {}), ...(row.expected ? { expected: row.expected } : {}) };
}

/** The seqs whose stored row is not the expected one, or has no expected one. */
const DIFFERING = `CREATE TEMPORARY TABLE adjustments_differing ON COMMIT DROP AS ${differingFrom('adjustments_expected')}`;

const REPAIR = `
ALTER TABLE stock_adjustments DISABLE TRIGGER USER;
DELETE FROM stock_adjustments WHERE seq IN (SELECT seq FROM adjustments_differing);
INSERT INTO stock_adjustments (seq, recorded_at, pet_id, previous_quantity, quantity, actor, request_id)
SELECT * FROM adjustments_expected WHERE seq IN (SELECT seq FROM adjustments_differing) ORDER BY seq;
ALTER TABLE stock_adjustments ENABLE TRIGGER USER`;

/** Repairs the table inside the caller's transaction; returns how many rows it put right. */
export async function repairAdjustments(client: pg.ClientBase): Promise<number> {
  await client.query({ text: EXPECTED, query_timeout: WHOLE_LOG_TIMEOUT_MS } as pg.QueryConfig);
  await client.query({ text: DIFFERING, query_timeout: WHOLE_LOG_TIMEOUT_MS } as pg.QueryConfig);
  const { rows } = await client.query<{ n: number }>('SELECT count(*)::integer AS n FROM adjustments_differing');
  const differing = rows[0]!.n;
  if (differing > 0) await client.query({ text: REPAIR, query_timeout: WHOLE_LOG_TIMEOUT_MS } as pg.QueryConfig);
  return differing;
}
