// copy-store's target side on SQLite: a whole history into an empty file, in one
// IMMEDIATE transaction held while the source's pages arrive (the target serves no one
// while it is filled), so that a failure anywhere leaves it empty. Events keep their seq,
// times, actors and hashes (the chain must verify to the same digest as at the source);
// the projection and the stock adjustments are replayed from them, as the write path
// makes them, and the Merkle tree grown from their hashes, as the source's was (the same
// hashes make the same tree). A copy that is kept (scripts/mirror's events.db) is
// extended the same way with the events that follow its own: appendHistory.
import type { Db } from './database.ts';
import { RECORD_COLUMNS, rowOfRecord } from '../idempotency.ts';
import { continuing, StoreNotEmpty, type HistoryImport } from '../history-copy.ts';
import type { ChainRow } from '../event-log.ts';
import { applyEvent, type Entry } from '../../domain/apply-event.ts';
import { toLoggedEvent } from '../replay-rows.ts';
import { eventLeaf, extendTree } from '../../support/merkle.ts';
import { adjustmentOf } from '../adjustment-rows.ts';
import { GENESIS_HASH } from '../hash-chain.ts';
import { makeProjectionTable } from './projection.ts';
import { makeEntryReader } from './reads/entries.ts';
import { makeFrontierReader } from './tree-frontier.ts';

/**
 * Inserts pages of events verbatim after a log of `size` events, with the tree's nodes
 * grown from its frontier and their adjustment rows; a pet's entry before the pages comes
 * from entryOf, asked once. Returns how many events, and each pet's entry after them.
 */
async function insertPages(
  db: Db,
  pages: AsyncIterable<ChainRow[]>,
  size: number,
  entryOf: (petId: bigint) => Entry | undefined,
): Promise<{ events: number; entries: Map<bigint, Entry> }> {
  const insertEvent = db.prepare(
    `INSERT INTO events (seq, pet_id, version, type, data, actor, request_id, recorded_at, prev_hash, hash)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const insertAdjustment = db.prepare(
    `INSERT INTO stock_adjustments (seq, recorded_at, pet_id, previous_quantity, quantity, actor, request_id)
     VALUES (@seq, @recordedAt, @petId, @previousQuantity, @quantity, @actor, @requestId)`,
  );
  const insertNode = db.prepare('INSERT INTO tree_nodes (level, idx, hash) VALUES (?, ?, ?)');
  const entries = new Map<bigint, Entry>();
  const entry = (petId: bigint) => (entries.has(petId) ? entries.get(petId) : entryOf(petId));
  let events = 0;
  let frontier = makeFrontierReader(db)(size);
  for await (const page of pages) {
    const grown = extendTree(
      size + events,
      frontier,
      page.map((row) => eventLeaf(String(row[9]))),
    );
    for (const node of grown.nodes) insertNode.run(node.level, node.index, node.hash);
    frontier = grown.frontier;
    for (const row of page) {
      const [seq, petId, version, type, data, actor, requestId, recordedAt] = row;
      const event = toLoggedEvent([seq, petId, version, type, data, recordedAt]);
      // Before the event is in the table: entryOf may replay the pet's events from it.
      const before = entry(event.petId);
      insertEvent.run(...row);
      const adjustment = adjustmentOf(before, event, { seq, petId, actor, requestId, recordedAt });
      if (adjustment) insertAdjustment.run(adjustment);
      entries.set(event.petId, applyEvent(before, event));
    }
    events += page.length;
  }
  return { events, entries };
}

export async function importHistory(
  db: Db,
  history: HistoryImport,
): Promise<{ events: number; keys: number; entries: number; idempotency: number }> {
  const present = db.prepare(
    `SELECT EXISTS (SELECT 1 FROM events) AS events, EXISTS (SELECT 1 FROM api_keys) AS keys,
            EXISTS (SELECT 1 FROM inventory) AS entries, EXISTS (SELECT 1 FROM idempotency_keys) AS records`,
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
  const insertRecord = db.prepare(
    `INSERT INTO idempotency_keys (${RECORD_COLUMNS.join(', ')}) VALUES (${RECORD_COLUMNS.map(() => '?').join(', ')})`,
  );
  db.exec('BEGIN IMMEDIATE');
  try {
    StoreNotEmpty.unless(present.get() as Record<'events' | 'keys' | 'entries' | 'records', number>);
    if (history.logId) db.prepare('UPDATE log_identity SET log_id = ?').run(history.logId);
    const { events, entries } = await insertPages(db, history.events, 0, () => undefined);
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

/**
 * The events that follow this store's last, verbatim, in one IMMEDIATE transaction: the
 * projection, the adjustments and the tree extended as the write path extends them.
 * Rejects with HistoryDiverged, and writes nothing, when the first does not continue the
 * store's chain (its seq is not the next, or its prev_hash is not the last event's hash).
 */
export async function appendHistory(db: Db, pages: AsyncIterable<ChainRow[]>): Promise<{ events: number }> {
  const last = db.prepare('SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1').safeIntegers(true);
  const projection = makeProjectionTable(db);
  db.exec('BEGIN IMMEDIATE');
  try {
    const head = (last.get() as { seq: bigint; hash: string } | undefined) ?? { seq: 0n, hash: GENESIS_HASH };
    const { events, entries } = await insertPages(db, continuing(pages, head), Number(head.seq), makeEntryReader(db, projection));
    for (const entry of entries.values()) projection.put(entry);
    db.exec('COMMIT');
    return { events };
  } catch (error) {
    if (db.inTransaction) db.exec('ROLLBACK');
    throw error;
  }
}
