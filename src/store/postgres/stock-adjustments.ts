// The stock_adjustments audit view on PostgreSQL, as keyset pages filtered by pet, actor
// and time.
import type pg from 'pg';
import type { AdjustmentRow, AuditFilter } from '../audit-reads.ts';
import { PAGE_ROWS } from './pages.ts';

// One fixed condition per audit filter; the values are bound, never spliced into the SQL.
const AUDIT_CONDITIONS: Record<Exclude<keyof AuditFilter, 'after'>, string> = {
  pet: 'e.pet_id = $',
  actor: 'e.actor = $',
  since: 'e.recorded_at >= $',
  until: 'e.recorded_at < $',
};

/**
 * One page of the stock_adjustments view after a seq, as a statement of its own: the
 * view's lag() window would be computed over the whole log for every page, so the
 * previous quantity is looked up by (pet_id, version) instead, which is what lag() over
 * the pet's PetTracked and QuantitySet events by version gives.
 */
const auditPage = (where: string) => `
SELECT seq, recorded_at, pet_id, previous_quantity, quantity, quantity - previous_quantity AS delta, actor, request_id
FROM (
  SELECT e.seq, e.recorded_at, e.pet_id, e.actor, e.request_id,
         (e.data::jsonb ->> 'quantity')::bigint AS quantity,
         (SELECT (p.data::jsonb ->> 'quantity')::bigint FROM events p
          WHERE p.pet_id = e.pet_id AND p.version < e.version AND p.type IN ('PetTracked', 'QuantitySet')
          ORDER BY p.version DESC LIMIT 1) AS previous_quantity
  FROM events e
  WHERE e.type = 'QuantitySet' AND e.seq > $1${where}
  ORDER BY e.seq
  LIMIT ${PAGE_ROWS}
) AS page
ORDER BY seq`;

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
