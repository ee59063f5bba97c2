// The SQL a batch plan's rows are written with: its events, their stock adjustments, the
// tree's nodes they complete, the entries' final rows and the idempotency records.
import type { Db } from '../database.ts';
import type { BatchPlan } from '../../plan/batch-plan.ts';
import type { IdempotencyWriter } from '../idempotency.ts';
import type { ProjectionTable } from '../projection.ts';
import type { Ticket } from '../../receipts/receipts.ts';

export function makePlanRows(
  db: Db,
  projection: ProjectionTable,
  idempotency: IdempotencyWriter,
): (plan: BatchPlan, ticket?: Ticket) => void {
  const insert = db.prepare(
    `INSERT INTO events (seq, pet_id, version, type, data, actor, request_id, recorded_at, prev_hash, hash)
     VALUES (@seq, @petId, @version, @type, @data, @actor, @requestId, @recordedAt, @prevHash, @hash)`,
  );
  const insertAdjustment = db.prepare(
    `INSERT INTO stock_adjustments (seq, recorded_at, pet_id, previous_quantity, quantity, actor, request_id)
     VALUES (@seq, @recordedAt, @petId, @previousQuantity, @quantity, @actor, @requestId)`,
  );
  const insertNode = db.prepare('INSERT INTO tree_nodes (level, idx, hash) VALUES (?, ?, ?)');
  return (plan, ticket) => {
    for (const event of plan.events) insert.run(event);
    for (const adjustment of plan.adjustments) insertAdjustment.run(adjustment);
    for (const node of plan.tree.nodes) insertNode.run(node.level, node.index, node.hash);
    for (const entry of plan.entries) projection.put(entry);
    // A stored 200 carries its receipt: the records wait for the signatures.
    if (plan.records.length > 0) ticket?.placeReceiptsSync();
    for (const record of plan.records) idempotency.put(record);
  };
}
