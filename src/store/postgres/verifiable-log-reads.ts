// What the log's verifiers read on PostgreSQL: the key log and the keys, the heads of
// both chains, the signing keys, the Merkle tree's nodes, and the triggers that keep the
// logs append-only.
import type pg from 'pg';
import type { NodeKey } from '../../support/merkle.ts';
import type { KeyHistory, LogHead, SigningKeyInfo } from '../audit-reads.ts';
import { nodeId } from '../plan/batch-plan.ts';
import { GENESIS_HASH } from '../hash-chain.ts';
import type { KeyChainRow, KeyRecord } from '../keys.ts';
import { SIGNING_KEYS_SQL, signingKeyInfo } from '../signing-keys.ts';
import { page, SNAPSHOT } from './pages.ts';
import { inTransaction } from './transactions.ts';
import { contiguous } from '../tree-rows.ts';

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
  ['stock_adjustments_no_update', 'stock_adjustments'],
  ['stock_adjustments_no_delete', 'stock_adjustments'],
  ['stock_adjustments_no_truncate', 'stock_adjustments'],
] as const;

interface HeadRow {
  seq: string | null;
  hash: string | null;
  recordedAt: string | null;
  keySeq: string | null;
  keyHash: string | null;
  logId: string;
}

/** The key log, the keys and both chains' heads, in one snapshot. */
export function keyHistory(pool: pg.Pool): Promise<KeyHistory> {
  return inTransaction(pool, SNAPSHOT, async (client) => {
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
  });
}

/** The guards (GUARDS) missing. A trigger disabled (ALTER TABLE … DISABLE TRIGGER) or
 * firing only for replicas guards nothing. */
export async function missingGuards(pool: pg.Pool): Promise<string[]> {
  const { rows } = await pool.query<{ name: string }>(
    `SELECT g.name FROM unnest($1::text[], $2::text[]) AS g(name, tab)
     WHERE NOT EXISTS (SELECT 1 FROM pg_trigger t WHERE t.tgname = g.name AND t.tgrelid = g.tab::regclass
                         AND t.tgenabled IN ('O', 'A'))
     ORDER BY g.name`,
    [GUARDS.map(([name]) => name), GUARDS.map(([, table]) => table)],
  );
  return rows.map((r) => r.name);
}

export async function logHead(pool: pg.Pool): Promise<LogHead> {
  const { rows } = await pool.query<HeadRow>(
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
}

/** The nodes of the tree at the given levels ($1) and indexes ($2), each looked up by its
 * key (the planner takes unnest for a few rows, so it never scans the whole tree). */
export const TREE_NODES = `SELECT level, idx, hash FROM tree_nodes WHERE (level, idx) IN (SELECT * FROM unnest($1::smallint[], $2::bigint[]))`;

export async function treeNodes(pool: pg.Pool, keys: readonly NodeKey[]): Promise<Map<string, Buffer>> {
  const { rows } = await pool.query<{ level: number; idx: string; hash: Buffer }>(TREE_NODES, [
    keys.map((k) => k.level),
    keys.map((k) => String(k.index)),
  ]);
  return new Map(rows.map((r) => [nodeId(r.level, Number(r.idx)), r.hash]));
}

export async function treeRow(pool: pg.Pool, level: number, from: number, count: number): Promise<Buffer[]> {
  // idx is named otherwise as text: ORDER BY would take the text column and sort 10 before 2.
  const { rows } = await pool.query<{ i: string; hash: Buffer }>({
    text: 'SELECT idx::text AS i, hash FROM tree_nodes WHERE level = $1 AND idx >= $2 AND idx < $3 ORDER BY idx',
    values: [level, from, from + count],
  });
  return contiguous(
    rows.map((r) => [r.i, r.hash] as const),
    from,
  );
}

export async function treeNodeCount(pool: pg.Pool): Promise<number> {
  const { rows } = await pool.query<{ n: string }>('SELECT count(*)::text AS n FROM tree_nodes');
  return Number(rows[0]!.n);
}

export async function signingKeys(pool: pg.Pool): Promise<SigningKeyInfo[]> {
  const { rows } = await pool.query<Parameters<typeof signingKeyInfo>[0]>(SIGNING_KEYS_SQL);
  return rows.map(signingKeyInfo);
}
