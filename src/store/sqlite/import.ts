// copy-store's target side on SQLite: a whole history into an empty file, in one
// IMMEDIATE transaction held while the source's pages arrive (the target serves no one
// while it is filled), so that a failure anywhere leaves it empty. Events keep their seq,
// times, actors and hashes (the chain must verify to the same digest as at the source);
// the projection and the stock adjustments are replayed from them, as the write path
// makes them, and the Merkle tree
// grown from their hashes, as the source's was (the same hashes make the same tree).
import type { Db } from './database.ts';
import { RECORD_COLUMNS, rowOfRecord } from '../idempotency.ts';
import { StoreNotEmpty, type HistoryImport } from '../history-copy.ts';
import { applyEvent, type Entry } from '../../domain/apply-event.ts';
import { toLoggedEvent } from '../replay-rows.ts';
import { eventLeaf, extendTree } from '../../support/merkle.ts';
import { adjustmentOf } from '../adjustment-rows.ts';

export async function importHistory(
  db: Db,
  history: HistoryImport,
): Promise<{ events: number; keys: number; entries: number; idempotency: number }> {
  const present = db.prepare(
    `SELECT EXISTS (SELECT 1 FROM events) AS events, EXISTS (SELECT 1 FROM api_keys) AS keys,
            EXISTS (SELECT 1 FROM inventory) AS entries, EXISTS (SELECT 1 FROM idempotency_keys) AS records`,
  );
  const insertEvent = db.prepare(
    `INSERT INTO events (seq, pet_id, version, type, data, actor, request_id, recorded_at, prev_hash, hash)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const insertEntry = db.prepare(
    'INSERT INTO inventory (pet_id, quantity, status, version, updated_at) VALUES (@petId, @quantity, @status, @version, @updatedAt)',
  );
  const insertKey = db.prepare(
    `INSERT INTO api_keys (name, hash, created_at, created_by, revoked_at, revoked_by)
     VALUES (@name, @hash, @createdAt, @createdBy, @revokedAt, @revokedBy)`,
  );
  const insertKeyEvent = db.prepare(
    'INSERT INTO api_key_events (seq, type, name, key_hash, recorded_at, actor, prev_hash, hash, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
  );
  const insertAdjustment = db.prepare(
    `INSERT INTO stock_adjustments (seq, recorded_at, pet_id, previous_quantity, quantity, actor, request_id)
     VALUES (@seq, @recordedAt, @petId, @previousQuantity, @quantity, @actor, @requestId)`,
  );
  const insertNode = db.prepare('INSERT INTO tree_nodes (level, idx, hash) VALUES (?, ?, ?)');
  const insertRecord = db.prepare(
    `INSERT INTO idempotency_keys (${RECORD_COLUMNS.join(', ')}) VALUES (${RECORD_COLUMNS.map(() => '?').join(', ')})`,
  );
  db.exec('BEGIN IMMEDIATE');
  try {
    StoreNotEmpty.unless(present.get() as Record<'events' | 'keys' | 'entries' | 'records', number>);
    if (history.logId) db.prepare('UPDATE log_identity SET log_id = ?').run(history.logId);
    const entries = new Map<bigint, Entry>();
    let events = 0;
    let frontier = new Map<string, Buffer>();
    for await (const page of history.events) {
      const grown = extendTree(
        events,
        frontier,
        page.map((row) => eventLeaf(String(row[9]))),
      );
      for (const node of grown.nodes) insertNode.run(node.level, node.index, node.hash);
      frontier = grown.frontier;
      for (const row of page) {
        insertEvent.run(...row);
        const [seq, petId, version, type, data, actor, requestId, recordedAt] = row;
        const event = toLoggedEvent([seq, petId, version, type, data, recordedAt]);
        const before = entries.get(event.petId);
        const adjustment = adjustmentOf(before, event, { seq, petId, actor, requestId, recordedAt });
        if (adjustment) insertAdjustment.run(adjustment);
        entries.set(event.petId, applyEvent(before, event));
      }
      events += page.length;
    }
    for (const entry of entries.values()) insertEntry.run(entry);
    // The key log before the keys: the table's triggers accept a key only with its events.
    for (const row of history.keyEvents) insertKeyEvent.run(...row);
    for (const key of history.keys) insertKey.run(key);
    let records = 0;
    for await (const page of history.idempotency ?? []) {
      for (const record of page) insertRecord.run(...rowOfRecord(record));
      records += page.length;
    }
    db.exec('COMMIT');
    return { events, keys: history.keys.length, entries: entries.size, idempotency: records };
  } catch (error) {
    if (db.inTransaction) db.exec('ROLLBACK');
    throw error;
  }
}
