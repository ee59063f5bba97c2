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

export async function* stockAdjustments(pool: pg.Pool, filter: AuditFilter): AsyncIterable<AdjustmentRow[]> {
  const given = (Object.keys(AUDIT_CONDITIONS) as (keyof typeof AUDIT_CONDITIONS)[]).filter((name) => filter[name] !== undefined);
  const where = given.map((name, i) => ` AND ${AUDIT_CONDITIONS[name]}${i + 2}`).join('');
  const values = given.map((name) => String(filter[name]));
  for (let after = String(filter.after ?? 0); ;) {
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

/** The smallest seq recorded after `at`, through the time index. */
export async function firstSeqAfter(pool: pg.Pool, at: string): Promise<bigint | undefined> {
  const { rows } = await pool.query<{ seq: string | null }>('SELECT min(seq)::text AS seq FROM events WHERE recorded_at > $1', [at]);
  return rows[0]!.seq === null ? undefined : BigInt(rows[0]!.seq);
}
