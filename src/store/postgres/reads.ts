// The projection and the log as pages (pages.ts). Reads that must agree with each other
// (the projection's pages, a rebuild's check) run in one REPEATABLE READ, READ ONLY
// transaction: one snapshot. The log's pages need none: events are only appended, and
// under the chain head's lock seqs commit in order, so a page boundary never hides an
// older seq.
import type pg from 'pg';
import type { PetStatus } from '../../domain/events.ts';
import type { LogView } from '../audit-reads.ts';
import type { ChainRow, ReplayRow, SeqRange } from '../event-log.ts';
import type { Entry, InventoryRow } from '../projection.ts';
import { page, PAGE_ROWS, SNAPSHOT, type Queryable } from './pages.ts';
import { checkout, inTransaction } from './transactions.ts';

type RawEntry = [petId: bigint, quantity: number, status: PetStatus, version: number, updatedAt: string];
type RawChainRow = [bigint, bigint, number, string, string, string, string, string, string, string];

const CHAIN_ROWS = `SELECT seq, pet_id, version, type, data, actor, request_id, recorded_at, prev_hash, hash
  FROM events WHERE seq > $1 ORDER BY seq LIMIT $2`;

/** The projection's rows by pet id, page by page, on db (one snapshot when db is a transaction's client). */
async function* projectionPages(db: Queryable): AsyncIterable<RawEntry[]> {
  for (let after = '0'; ;) {
    const rows = await page<RawEntry>(
      db,
      'SELECT pet_id, quantity, status, version, updated_at FROM inventory WHERE pet_id > $1 ORDER BY pet_id LIMIT $2',
      [after, PAGE_ROWS],
    );
    if (rows.length > 0) yield rows;
    if (rows.length < PAGE_ROWS) return;
    after = String(rows[rows.length - 1]![0]);
  }
}

async function listEntries(db: Queryable): Promise<Entry[]> {
  const entries: Entry[] = [];
  for await (const rows of projectionPages(db)) {
    for (const [petId, quantity, status, version, updatedAt] of rows) entries.push({ petId, quantity, status, version, updatedAt });
  }
  return entries;
}

/** The projection's rows in one snapshot, page by page. */
export async function* inventoryRows(pool: pg.Pool): AsyncIterable<InventoryRow[]> {
  const { client, release } = await checkout(pool);
  let broken: Error | undefined;
  let open = false;
  try {
    await client.query(SNAPSHOT);
    open = true;
    for await (const rows of projectionPages(client))
      yield rows.map(([petId, quantity, status, version]) => [petId, quantity, status, version]);
    await client.query('COMMIT');
    open = false;
  } catch (error) {
    broken = error as Error;
    throw error;
  } finally {
    // A consumer that stops early leaves the transaction open: the connection is
    // rolled back before it goes back to the pool.
    if (open && !broken) await client.query('ROLLBACK').catch((error: Error) => (broken = error));
    release(broken);
  }
}

export async function* replayPages(
  db: Queryable,
  { after = 0, upTo = Number.MAX_SAFE_INTEGER }: SeqRange = {},
): AsyncIterable<ReplayRow[]> {
  for (let from = String(after); ;) {
    const rows = await page<[bigint, bigint, number, string, string, string]>(
      db,
      'SELECT seq, pet_id, version, type, data, recorded_at FROM events WHERE seq > $1 AND seq <= $2 ORDER BY seq LIMIT $3',
      [from, String(upTo), PAGE_ROWS],
    );
    if (rows.length > 0) yield rows.map(([seq, petId, version, type, data, at]) => [seq, petId, BigInt(version), type, data, at]);
    if (rows.length < PAGE_ROWS) return;
    from = String(rows[rows.length - 1]![0]);
  }
}

const chainRowOf = ([seq, petId, version, ...rest]: RawChainRow): ChainRow => [seq, petId, BigInt(version), ...rest];

/** The whole log with its hashes, page by page. */
export async function* chainRows(pool: pg.Pool): AsyncIterable<ChainRow[]> {
  for (let after = '0'; ;) {
    const rows = await page<RawChainRow>(pool, CHAIN_ROWS, [after, PAGE_ROWS]);
    if (rows.length > 0) yield rows.map(chainRowOf);
    if (rows.length < PAGE_ROWS) return;
    after = String(rows[rows.length - 1]![0]);
  }
}

/** One statement, no transaction: the feed never holds a snapshot between pages. */
export async function eventsAfter(pool: pg.Pool, after: bigint, limit: number): Promise<ChainRow[]> {
  const rows = await page<RawChainRow>(pool, CHAIN_ROWS, [String(after), limit]);
  return rows.map(chainRowOf);
}

/** read, given the log and the projection as one snapshot shows them. */
export function snapshot<T>(pool: pg.Pool, read: (view: LogView) => Promise<T>): Promise<T> {
  return inTransaction(pool, SNAPSHOT, async (client) => {
    const { rows } = await client.query<{ seq: bigint }>('SELECT coalesce(max(seq), 0)::bigint AS seq FROM events');
    return read({
      lastSeq: Number(rows[0]!.seq),
      replayRows: (range) => replayPages(client, range),
      entries: () => listEntries(client),
    });
  });
}
