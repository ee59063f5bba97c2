// The stock_adjustments audit table on PostgreSQL, as keyset pages filtered by pet, actor
// and time, and the reads by index that scripts/stock-at --pet makes instead of a replay.
import type pg from 'pg';
import type { AdjustmentRow, AuditFilter } from '../audit-reads.ts';
import { PAGE_ROWS } from './pages.ts';
import type { ReplayRow } from '../event-log.ts';

// One fixed condition per audit filter; the values are bound, never spliced into the SQL.
const AUDIT_CONDITIONS: Record<Exclude<keyof AuditFilter, 'after'>, string> = {
  pet: 'pet_id = $',
  actor: 'actor = $',
  since: 'recorded_at >= $',
  until: 'recorded_at < $',
};

/** One page of stock_adjustments after a seq: the filters' rows are found by index
 * (stock_adjustments_by_pet, _by_actor, _by_time). */
const auditPage = (where: string) => `
SELECT seq, recorded_at, pet_id, previous_quantity, quantity, delta, actor, request_id
FROM stock_adjustments
WHERE seq > $1${where}
ORDER BY seq
LIMIT ${PAGE_ROWS}`;

/**
 * Where a time window's pages start. PostgreSQL's planner takes a window's rows as spread
 * evenly through the table, where they lie together, so for a window alone it walks the
 * table in seq order from the page's start: a month at the end of the log was read from
 * its beginning. The time index tells where the window is reached; when the rows before
 * that outnumber the rest, the window's smallest seq (exact: the times only guide the
 * choice) is where the walk starts.
 */
async function windowStart(pool: pg.Pool, filter: AuditFilter, after: bigint): Promise<bigint> {
  const { since, until } = filter;
  if (since === undefined || filter.pet !== undefined || filter.actor !== undefined) return after;
  const { rows } = await pool.query<{ reached: string | null; last: string | null }>(
    `SELECT (SELECT seq FROM stock_adjustments WHERE recorded_at >= $1 ORDER BY recorded_at LIMIT 1)::text AS reached,
            (SELECT max(seq) FROM stock_adjustments)::text AS last`,
    [since],
  );
  if (rows[0]!.reached === null || rows[0]!.last === null) return after;
  const reached = BigInt(rows[0]!.reached);
  if (reached - after <= BigInt(rows[0]!.last) - reached) return after;
  // seq + 0: not min(seq), which PostgreSQL answers by walking the primary key in order.
  const window = until === undefined ? '' : ' AND recorded_at < $2';
  const { rows: first } = await pool.query<{ seq: string | null }>(
    `SELECT min(seq + 0)::text AS seq FROM stock_adjustments WHERE recorded_at >= $1${window}`,
    until === undefined ? [since] : [since, until],
  );
  if (first[0]!.seq === null) return BigInt(rows[0]!.last);
  const start = BigInt(first[0]!.seq) - 1n;
  return start > after ? start : after;
}

export async function* stockAdjustments(pool: pg.Pool, filter: AuditFilter): AsyncIterable<AdjustmentRow[]> {
  const given = (Object.keys(AUDIT_CONDITIONS) as (keyof typeof AUDIT_CONDITIONS)[]).filter((name) => filter[name] !== undefined);
  const where = given.map((name, i) => ` AND ${AUDIT_CONDITIONS[name]}${i + 2}`).join('');
  const values = given.map((name) => String(filter[name]));
  for (let after = String(await windowStart(pool, filter, BigInt(filter.after ?? 0))); ;) {
    const { rows } = await pool.query<AdjustmentRow>(auditPage(where), [after, ...values]);
    if (rows.length > 0) yield rows;
    if (rows.length < PAGE_ROWS) return;
    after = String(rows[rows.length - 1]!.seq);
  }
}

/** One pet's events by seq, through the (pet_id, version) index. */
export async function petEvents(pool: pg.Pool, petId: bigint): Promise<ReplayRow[]> {
  const { rows } = await pool.query<{ seq: string; pet_id: string; version: number; type: string; data: string; recorded_at: string }>(
    'SELECT seq::text, pet_id::text, version, type, data, recorded_at FROM events WHERE pet_id = $1 ORDER BY version',
    [String(petId)],
  );
  return rows.map((r) => [BigInt(r.seq), BigInt(r.pet_id), BigInt(r.version), r.type, r.data, r.recorded_at]);
}

/** The smallest seq recorded after `at`, from the time index alone (it carries seq): seq + 0,
 * not min(seq), which PostgreSQL answers by walking the primary key from the start. */
export async function firstSeqAfter(pool: pg.Pool, at: string): Promise<bigint | undefined> {
  const { rows } = await pool.query<{ seq: string | null }>('SELECT min(seq + 0)::text AS seq FROM events WHERE recorded_at > $1', [at]);
  return rows[0]!.seq === null ? undefined : BigInt(rows[0]!.seq);
}
