// The stock_adjustments audit table on PostgreSQL, as keyset pages filtered by pet, actor
// and time.
import type pg from 'pg';
import type { AdjustmentRow, AuditFilter } from '../audit-reads.ts';
import { PAGE_ROWS } from './pages.ts';

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
