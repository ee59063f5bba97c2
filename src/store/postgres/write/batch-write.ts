// A batch's rows in one statement, arrays through unnest: its events inserted with their
// stock adjustments, its entries upserted, its idempotency records stored, its Merkle tree nodes added and the
// chain head moved on, telling every instance at COMMIT (NOTIFY with the new change count).
import type pg from 'pg';
import type { BatchPlan } from '../../plan/batch-plan.ts';
import { RECORD_COLUMNS, rowOfRecord } from '../../idempotency.ts';
import { CHANGES_CHANNEL } from '../changes.ts';
import { entryColumns, upsertEntries } from '../projection.ts';

const WRITE = `
WITH new_events AS (
  INSERT INTO events (seq, pet_id, version, type, data, actor, request_id, recorded_at, prev_hash, hash)
  SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::integer[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[])
), new_entries AS (
  ${upsertEntries(11)}
), new_records AS (
  -- In place of an expired record of the same key, not yet removed.
  INSERT INTO idempotency_keys (${RECORD_COLUMNS.join(', ')})
  SELECT * FROM unnest($18::text[], $19::text[], $20::text[], $21::text[], $22::integer[], $23::text[], $24::text[], $25::text[], $26::text[], $27::text[])
  ON CONFLICT (api_key, idempotency_key) DO UPDATE SET
    ${RECORD_COLUMNS.filter((c) => c !== 'api_key' && c !== 'idempotency_key')
      .map((c) => `${c} = excluded.${c}`)
      .join(', ')}
  WHERE idempotency_keys.expires_at <= excluded.created_at
)
, new_nodes AS (
  INSERT INTO tree_nodes (level, idx, hash)
  SELECT * FROM unnest($28::smallint[], $29::bigint[], $30::bytea[])
)
, new_adjustments AS (
  INSERT INTO stock_adjustments (seq, recorded_at, pet_id, previous_quantity, quantity, actor, request_id)
  SELECT * FROM unnest($31::bigint[], $32::text[], $33::bigint[], $34::bigint[], $35::bigint[], $36::text[], $37::text[])
)
UPDATE chain_head SET seq = $16, hash = $17, changes = changes + 1
RETURNING changes, pg_notify('${CHANGES_CHANNEL}', changes::text)`;

/** The WRITE statement's parameters for a plan's rows (arrays through unnest). */
function paramsOf(plan: BatchPlan): unknown[] {
  const { events, entries, records, next } = plan;
  const column = <T>(rows: readonly T[], value: (row: T) => unknown) => rows.map(value);
  return [
    column(events, (e) => String(e.seq)),
    column(events, (e) => String(e.petId)),
    column(events, (e) => e.version),
    column(events, (e) => e.type),
    column(events, (e) => e.data),
    column(events, (e) => e.actor),
    column(events, (e) => e.requestId),
    column(events, (e) => e.recordedAt),
    column(events, (e) => e.prevHash),
    column(events, (e) => e.hash),
    ...entryColumns(entries),
    String(next.seq),
    next.hash,
    ...RECORD_COLUMNS.map((_, i) => records.map((r) => rowOfRecord(r)[i])),
    column(plan.tree.nodes, (n) => n.level),
    column(plan.tree.nodes, (n) => String(n.index)),
    column(plan.tree.nodes, (n) => n.hash),
    column(plan.adjustments, (a) => String(a.seq)),
    column(plan.adjustments, (a) => a.recordedAt),
    column(plan.adjustments, (a) => String(a.petId)),
    column(plan.adjustments, (a) => a.previousQuantity),
    column(plan.adjustments, (a) => a.quantity),
    column(plan.adjustments, (a) => a.actor),
    column(plan.adjustments, (a) => a.requestId),
  ];
}

/** Writes the plan's rows; returns the chain head's new change count. A named statement:
 * each connection parses and plans it once, not once per batch. */
export async function writePlan(client: pg.ClientBase, plan: BatchPlan): Promise<bigint> {
  return (await client.query<{ changes: bigint }>({ name: 'append-batch', text: WRITE, values: paramsOf(plan) })).rows[0]!.changes;
}
