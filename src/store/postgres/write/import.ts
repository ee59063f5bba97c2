// copy-store's target side: a whole history into an empty PostgreSQL store, in one
// transaction holding the chain head, so that no instance can append in between and a
// failure anywhere leaves the store empty. Events keep their seq, times, actors and
// hashes (the chain must verify to the same digest as at the source); the projection is
// replayed from them, as rebuild-projection would, the stock adjustments as the write path
// makes them, and the Merkle tree grown from their hashes, as the source's was (the same
// hashes make the same tree). appendHistory extends a store the same way with the events
// that follow its own, under the same lock.
import type pg from 'pg';
import { RECORD_COLUMNS, rowOfRecord } from '../../idempotency.ts';
import type { ChainRow } from '../../event-log.ts';
import { continuing, StoreNotEmpty, type HistoryImport } from '../../history-copy.ts';
import type { IdempotencyRecord } from '../../idempotency.ts';
import type { KeyChainRow, KeyRecord } from '../../keys.ts';
import { applyEvent, type Entry } from '../../../domain/apply-event.ts';
import { toLoggedEvent } from '../../replay-rows.ts';
import { CHANGES_CHANNEL, KEYS_CHANNEL } from '../changes.ts';
import { writeEntries } from '../projection.ts';
import { loadEntries } from '../entries.ts';
import { FRONTIER } from './batch-start.ts';
import { eventLeaf, extendTree, nodeId } from '../../../support/merkle.ts';
import { adjustmentOf, type AdjustmentWrite } from '../../adjustment-rows.ts';

const INSERT_ADJUSTMENTS = `
INSERT INTO stock_adjustments (seq, recorded_at, pet_id, previous_quantity, quantity, actor, request_id)
SELECT * FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::bigint[], $5::bigint[], $6::text[], $7::text[])`;

const INSERT_NODES = 'INSERT INTO tree_nodes (level, idx, hash) SELECT * FROM unnest($1::smallint[], $2::bigint[], $3::bytea[])';

const INSERT_EVENTS = `
INSERT INTO events (seq, pet_id, version, type, data, actor, request_id, recorded_at, prev_hash, hash)
SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::integer[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[])`;

const INSERT_KEYS = `
INSERT INTO api_keys (name, hash, created_at, created_by, revoked_at, revoked_by)
SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[])`;

const INSERT_RECORDS = `
INSERT INTO idempotency_keys (${RECORD_COLUMNS.join(', ')})
SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::integer[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[])`;
const INSERT_KEY_EVENTS = `
INSERT INTO api_key_events (seq, type, name, key_hash, recorded_at, actor, prev_hash, hash, data)
SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[])`;

/** Where the imported events start: after size events whose tree has this frontier; the
 * entries of pets before them come from load (none in an empty store). */
interface ImportStart {
  size: number;
  frontier: Map<string, Buffer>;
  load: (client: pg.ClientBase, petIds: bigint[]) => Promise<Map<bigint, Entry>>;
}

const EMPTY: ImportStart = { size: 0, frontier: new Map(), load: () => Promise.resolve(new Map()) };

/** The events, page by page, with the tree's nodes grown from their hashes; returns the
 * entries replayed from them, their count and the chain's head after the last. */
async function importEvents(client: pg.ClientBase, pages: AsyncIterable<ChainRow[]>, start: ImportStart = EMPTY) {
  const entries = new Map<bigint, Entry>();
  let events = 0;
  let head: { seq: bigint; hash: string } | undefined;
  let frontier = start.frontier;
  for await (const page of pages) {
    if (page.length === 0) continue;
    const unseen = [...new Set(page.map((row) => row[1]))].filter((petId) => !entries.has(petId));
    for (const [petId, entry] of await start.load(client, unseen)) entries.set(petId, entry);
    const cols = Array.from({ length: 10 }, (_, i) => page.map((row) => (typeof row[i] === 'bigint' ? String(row[i]) : row[i])));
    await client.query(INSERT_EVENTS, cols);
    const grown = extendTree(
      start.size + events,
      frontier,
      page.map((row) => eventLeaf(String(row[9]))),
    );
    await client.query(INSERT_NODES, [
      grown.nodes.map((n) => n.level),
      grown.nodes.map((n) => String(n.index)),
      grown.nodes.map((n) => n.hash),
    ]);
    frontier = grown.frontier;
    const adjustments: AdjustmentWrite[] = [];
    for (const [seq, petId, version, type, data, actor, requestId, recordedAt] of page) {
      const event = toLoggedEvent([seq, petId, version, type, data, recordedAt]);
      const before = entries.get(event.petId);
      const adjustment = adjustmentOf(before, event, { seq, petId, actor, requestId, recordedAt });
      if (adjustment) adjustments.push(adjustment);
      entries.set(event.petId, applyEvent(before, event));
    }
    await client.query(INSERT_ADJUSTMENTS, [
      adjustments.map((a) => String(a.seq)),
      adjustments.map((a) => a.recordedAt),
      adjustments.map((a) => String(a.petId)),
      adjustments.map((a) => a.previousQuantity),
      adjustments.map((a) => a.quantity),
      adjustments.map((a) => a.actor),
      adjustments.map((a) => a.requestId),
    ]);
    const last = page[page.length - 1]!;
    head = { seq: last[0], hash: last[9]! };
    events += page.length;
  }
  return { entries, events, head };
}

/** The key log, and its head moved to its last event. */
async function importKeyLog(client: pg.ClientBase, keyEvents: KeyChainRow[]): Promise<void> {
  if (keyEvents.length === 0) return;
  const cols = Array.from({ length: 9 }, (_, i) => keyEvents.map((row) => String(row[i])));
  await client.query(INSERT_KEY_EVENTS, cols);
  const last = keyEvents[keyEvents.length - 1]!;
  // Running instances read their keys again (keys.ts).
  await client.query(`UPDATE key_chain_head SET seq = $1, hash = $2 RETURNING pg_notify('${KEYS_CHANNEL}', seq::text)`, [
    String(last[0]),
    last[7],
  ]);
}

async function importKeys(client: pg.ClientBase, keys: KeyRecord[]): Promise<void> {
  if (keys.length === 0) return;
  await client.query(INSERT_KEYS, [
    keys.map((k) => k.name),
    keys.map((k) => k.hash),
    keys.map((k) => k.createdAt),
    keys.map((k) => k.createdBy),
    keys.map((k) => k.revokedAt),
    keys.map((k) => k.revokedBy),
  ]);
}

/** The stored answers, page by page; returns how many. */
async function importRecords(
  client: pg.ClientBase,
  pages: AsyncIterable<IdempotencyRecord[]> | Iterable<IdempotencyRecord[]>,
): Promise<number> {
  let records = 0;
  for await (const page of pages) {
    const cols = RECORD_COLUMNS.map((_, i) => page.map((r) => rowOfRecord(r)[i]));
    await client.query(INSERT_RECORDS, cols);
    records += page.length;
  }
  return records;
}

/** Runs inside a transaction that holds the chain head (SELECT … FOR UPDATE). */
export async function importHistory(client: pg.ClientBase, history: HistoryImport) {
  const { rows } = await client.query<{ events: boolean; keys: boolean; entries: boolean; records: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM events) AS events, EXISTS (SELECT 1 FROM api_keys) AS keys,
            EXISTS (SELECT 1 FROM inventory) AS entries, EXISTS (SELECT 1 FROM idempotency_keys) AS records`,
  );
  StoreNotEmpty.unless(rows[0]!);
  if (history.logId) await client.query('UPDATE log_identity SET log_id = $1', [history.logId]);
  const { entries, events, head } = await importEvents(client, history.events);
  await writeEntries(client, entries.values());
  // The key log before the keys: the table's triggers accept a key only with its events.
  await importKeyLog(client, history.keyEvents);
  await importKeys(client, history.keys);
  const records = await importRecords(client, history.idempotency ?? []);
  await moveHead(client, head);
  return { events, keys: history.keys.length, entries: entries.size, idempotency: records };
}

/** The chain head after the imported events, announced to the instances (their feeds and lists). */
async function moveHead(client: pg.ClientBase, head: { seq: bigint; hash: string } | undefined): Promise<void> {
  if (!head) return;
  await client.query(
    `UPDATE chain_head SET seq = $1, hash = $2, changes = changes + 1 RETURNING pg_notify('${CHANGES_CHANNEL}', changes::text)`,
    [String(head.seq), head.hash],
  );
}

/** The events that follow the store's last (HistoryCopy.appendHistory), inside a
 * transaction that holds the chain head. */
export async function appendHistory(client: pg.ClientBase, pages: AsyncIterable<ChainRow[]>): Promise<{ events: number }> {
  const { rows } = await client.query<{ seq: string; hash: string }>('SELECT seq::text, hash FROM chain_head');
  const tip = { seq: BigInt(rows[0]!.seq), hash: rows[0]!.hash };
  const nodes = await client.query<{ level: number; idx: string; hash: Buffer }>(FRONTIER);
  const frontier = new Map(nodes.rows.map((row) => [nodeId(row.level, Number(row.idx)), row.hash]));
  const start = { size: Number(tip.seq), frontier, load: loadEntries };
  const { entries, events, head } = await importEvents(client, continuing(pages, tip), start);
  await writeEntries(client, entries.values());
  await moveHead(client, head);
  return { events };
}
