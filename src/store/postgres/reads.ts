// Everything that reads more than a row: the projection, the log, the chain and the
// audit view, each as keyset pages of PAGE_ROWS rows, so no result is ever parsed in one
// piece on the event loop. Reads that must agree with each other (the projection's pages,
// a rebuild's check) run in one REPEATABLE READ, READ ONLY transaction: one snapshot.
// The log's pages need none: events are only appended, and under the chain head's lock
// seqs commit in order, so a page boundary never hides an older seq.
import { nodeId } from '../batch-plan.ts';
import type { NodeKey } from '../../support/merkle.ts';
import type pg from 'pg';
import type { PetStatus } from '../../domain/events.ts';
import { GENESIS_HASH } from '../hash-chain.ts';
import { SIGNING_KEYS_SQL, signingKeyInfo } from '../signing-keys.ts';
import type { AdjustmentRow, AuditFilter, KeyHistory, LogHead, LogView, SigningKeyInfo } from '../audit-reads.ts';
import type { ChainRow, ReplayRow, SeqRange } from '../event-log.ts';
import type { KeyChainRow, KeyRecord } from '../keys.ts';
import type { Entry, InventoryRow } from '../projection.ts';
import { checkout, inTransaction } from './transactions.ts';

const PAGE_ROWS = 256;
const SNAPSHOT = 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY';

type Queryable = pg.Pool | pg.ClientBase;

async function page<T>(db: Queryable, text: string, values: unknown[]): Promise<T[]> {
  return (await db.query({ text, values, rowMode: 'array' })).rows as T[];
}

type RawEntry = [petId: bigint, quantity: number, status: PetStatus, version: number, updatedAt: string];

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

async function* replayPages(db: Queryable, { after = 0, upTo = Number.MAX_SAFE_INTEGER }: SeqRange = {}): AsyncIterable<ReplayRow[]> {
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

/** The triggers that keep the logs append-only and the keys chained, with their tables. */
const GUARDS = [
  ['events_no_update', 'events'],
  ['events_no_delete', 'events'],
  ['events_no_truncate', 'events'],
  ['api_key_events_no_update', 'api_key_events'],
  ['api_key_events_no_delete', 'api_key_events'],
  ['api_key_events_no_truncate', 'api_key_events'],
  ['api_keys_no_delete', 'api_keys'],
  ['api_keys_no_truncate', 'api_keys'],
  ['api_keys_chained', 'api_keys'],
  ['tree_nodes_no_update', 'tree_nodes'],
  ['tree_nodes_no_delete', 'tree_nodes'],
  ['tree_nodes_no_truncate', 'tree_nodes'],
] as const;

export function makeReads(pool: pg.Pool) {
  return {
    async *inventoryRows(): AsyncIterable<InventoryRow[]> {
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
    },
    entries: () => inTransaction(pool, SNAPSHOT, (client) => listEntries(client)),
    async lastSeq() {
      const { rows } = await pool.query<{ seq: bigint }>('SELECT coalesce(max(seq), 0)::bigint AS seq FROM events');
      return Number(rows[0]!.seq);
    },
    replayRows: (range?: SeqRange) => replayPages(pool, range),
    async *chainRows(): AsyncIterable<ChainRow[]> {
      for (let after = '0'; ;) {
        const rows = await page<[bigint, bigint, number, string, string, string, string, string, string, string]>(
          pool,
          `SELECT seq, pet_id, version, type, data, actor, request_id, recorded_at, prev_hash, hash
           FROM events WHERE seq > $1 ORDER BY seq LIMIT $2`,
          [after, PAGE_ROWS],
        );
        if (rows.length > 0) yield rows.map(([seq, petId, version, ...rest]) => [seq, petId, BigInt(version), ...rest]);
        if (rows.length < PAGE_ROWS) return;
        after = String(rows[rows.length - 1]![0]);
      }
    },
    keyHistory: (): Promise<KeyHistory> =>
      inTransaction(pool, SNAPSHOT, async (client) => {
        const events = await page<KeyChainRow>(
          client,
          'SELECT seq, type, name, key_hash, recorded_at, actor, prev_hash, hash, data FROM api_key_events ORDER BY seq',
          [],
        );
        const { rows: keys } = await client.query<KeyRecord>(
          `SELECT name, hash, created_at AS "createdAt", created_by AS "createdBy", revoked_at AS "revokedAt", revoked_by AS "revokedBy"
           FROM api_keys ORDER BY name`,
        );
        const { rows } = await client.query<{ events: string; keys: string; eventsHash: string; keysHash: string }>(
          `SELECT e.seq::text AS events, e.hash AS "eventsHash", k.seq::text AS keys, k.hash AS "keysHash"
           FROM chain_head e, key_chain_head k`,
        );
        const [head] = rows;
        return {
          events,
          keys,
          counters: { events: Number(head!.events), keys: Number(head!.keys) },
          headHashes: { events: head!.eventsHash, keys: head!.keysHash },
        };
      }),
    async missingGuards(): Promise<string[]> {
      // A trigger disabled (ALTER TABLE … DISABLE TRIGGER) or firing only for replicas
      // guards nothing.
      const { rows } = await pool.query<{ name: string }>(
        `SELECT g.name FROM unnest($1::text[], $2::text[]) AS g(name, tab)
         WHERE NOT EXISTS (SELECT 1 FROM pg_trigger t WHERE t.tgname = g.name AND t.tgrelid = g.tab::regclass
                             AND t.tgenabled IN ('O', 'A'))
         ORDER BY g.name`,
        [GUARDS.map(([name]) => name), GUARDS.map(([, table]) => table)],
      );
      return rows.map((r) => r.name);
    },
    async logHead(): Promise<LogHead> {
      const { rows } = await pool.query<{
        seq: string | null;
        hash: string | null;
        recordedAt: string | null;
        keySeq: string | null;
        keyHash: string | null;
        logId: string;
      }>(
        `SELECT e.seq::text AS seq, e.hash, e.recorded_at AS "recordedAt", k.seq::text AS "keySeq", k.hash AS "keyHash",
                i.log_id AS "logId"
         FROM log_identity AS i
         LEFT JOIN (SELECT seq, hash, recorded_at FROM events ORDER BY seq DESC LIMIT 1) AS e ON true
         LEFT JOIN (SELECT seq, hash FROM api_key_events ORDER BY seq DESC LIMIT 1) AS k ON true`,
      );
      const row = rows[0]!;
      return {
        logId: row.logId,
        seq: Number(row.seq ?? 0),
        hash: row.hash ?? GENESIS_HASH,
        recordedAt: row.recordedAt,
        keys: { seq: Number(row.keySeq ?? 0), hash: row.keyHash ?? GENESIS_HASH },
      };
    },
    async treeNodes(keys: readonly NodeKey[]): Promise<Map<string, Buffer>> {
      const { rows } = await pool.query<{ level: number; idx: string; hash: Buffer }>(
        'SELECT level, idx, hash FROM tree_nodes WHERE (level, idx) IN (SELECT * FROM unnest($1::smallint[], $2::bigint[]))',
        [keys.map((k) => k.level), keys.map((k) => String(k.index))],
      );
      return new Map(rows.map((r) => [nodeId(r.level, Number(r.idx)), r.hash]));
    },
    async treeNodeCount(): Promise<number> {
      const { rows } = await pool.query<{ n: string }>('SELECT count(*)::text AS n FROM tree_nodes');
      return Number(rows[0]!.n);
    },
    async signingKeys(): Promise<SigningKeyInfo[]> {
      const { rows } = await pool.query<Parameters<typeof signingKeyInfo>[0]>(SIGNING_KEYS_SQL);
      return rows.map(signingKeyInfo);
    },
    // One statement, no transaction: the feed never holds a snapshot between pages.
    async eventsAfter(after: bigint, limit: number): Promise<ChainRow[]> {
      const rows = await page<[bigint, bigint, number, string, string, string, string, string, string, string]>(
        pool,
        `SELECT seq, pet_id, version, type, data, actor, request_id, recorded_at, prev_hash, hash
         FROM events WHERE seq > $1 ORDER BY seq LIMIT $2`,
        [String(after), limit],
      );
      return rows.map(([seq, petId, version, ...rest]) => [seq, petId, BigInt(version), ...rest]);
    },
    async *stockAdjustments(filter: AuditFilter): AsyncIterable<AdjustmentRow[]> {
      const given = (Object.keys(AUDIT_CONDITIONS) as (keyof typeof AUDIT_CONDITIONS)[]).filter((name) => filter[name] !== undefined);
      const where = given.map((name, i) => ` AND ${AUDIT_CONDITIONS[name]}${i + 2}`).join('');
      const values = given.map((name) => String(filter[name]));
      for (let after = String(filter.after ?? 0); ;) {
        const { rows } = await pool.query<AdjustmentRow>(auditPage(where), [after, ...values]);
        if (rows.length > 0) yield rows;
        if (rows.length < PAGE_ROWS) return;
        after = String(rows[rows.length - 1]!.seq);
      }
    },
    snapshot<T>(read: (view: LogView) => Promise<T>): Promise<T> {
      return inTransaction(pool, SNAPSHOT, async (client) => {
        const { rows } = await client.query<{ seq: bigint }>('SELECT coalesce(max(seq), 0)::bigint AS seq FROM events');
        return read({
          lastSeq: Number(rows[0]!.seq),
          replayRows: (range) => replayPages(client, range),
          entries: () => listEntries(client),
        });
      });
    },
    listEntries,
    replayPages,
  };
}
