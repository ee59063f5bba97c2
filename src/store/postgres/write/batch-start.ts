// The first round trip of a batch and the state its plan starts from. The round trip
// begins the transaction, tries the advisory locks of the batch's Idempotency-Keys
// (idempotency.ts) before it waits for the chain head, locks the head, and reads the
// Merkle tree's frontier, the key log's head, the newest event and the entries of the
// batch's pets beside it: under the head's lock, so no other instance can change them
// meanwhile. The records of the batch's Idempotency-Keys, if it has any, are read next.
import type pg from 'pg';
import { batchPets, batchScopes, nodeId, type PlanState } from '../../plan/batch-plan.ts';
import type { Submission } from '../../event-log.ts';
import { scopeId } from '../../idempotency.ts';
import type { BatchToSign } from '../../receipts/receipts.ts';
import { beginLocked, NEWEST, requireHeadAtNewest, resultsOf, resultWith } from './chain-head.ts';
import { entriesFrom, entriesRead, type EntryRow } from '../entries.ts';
import { keyLockOf, loadRecords } from './idempotency.ts';

// Read in the first round trip, under the chain head's lock: the Merkle tree's frontier
// for the head's size (the complete subtree ending at each set bit of the size, whose
// index at level n is (size >> n) - 1), and the key log's head, which checkpoints name.
// Each node is looked up by its key (LATERAL ... LIMIT 1, which the planner cannot turn
// into a join of the whole table): as a plain join, a table whose statistics are not yet
// gathered was planned as a hash join over every node, a read that grows with the log.
export const FRONTIER = `SELECT t.level, t.idx, t.hash FROM chain_head h CROSS JOIN generate_series(0, 62) AS l(n)
  CROSS JOIN LATERAL (SELECT level, idx, hash FROM tree_nodes WHERE level = l.n AND idx = (h.seq >> l.n) - 1 LIMIT 1) t
  WHERE ((h.seq >> l.n) & 1) = 1`;
const KEYS_HEAD = 'SELECT seq AS keys_seq, hash AS keys_hash FROM key_chain_head';

/** The advisory lock of each Idempotency-Key of the submissions, by scopeId. */
export function keyLocksOf(submissions: readonly Submission[]): Map<string, string> {
  return new Map(batchScopes(submissions).map((s) => [scopeId(s), String(keyLockOf(s))]));
}

/** The batch's first round trip; it ends in a savepoint that a failed write returns to. */
export function beginBatch(waitMs: number, keyLocks: Map<string, string>, submissions: readonly Submission[]): string {
  const pets = batchPets(submissions);
  const entries = pets.length === 0 ? '' : ` ${entriesRead(pets)};`;
  return `${beginLocked(waitMs, [...new Set(keyLocks.values())].map(BigInt))}; ${FRONTIER}; ${KEYS_HEAD}; ${NEWEST};${entries} SAVEPOINT batch`;
}

/** The tree's frontier and the key log's head, from the first round trip. */
function treeStateOf(result: pg.QueryResult | pg.QueryResult[]): { frontier: Map<string, Buffer>; keys: BatchToSign['keys'] } {
  const frontier = new Map<string, Buffer>();
  for (const row of (resultWith(result, 'idx')?.rows ?? []) as { level: number; idx: string; hash: Buffer }[]) {
    frontier.set(nodeId(row.level, Number(row.idx)), row.hash);
  }
  const keys = resultWith(result, 'keys_seq')?.rows[0] as { keys_seq: string; keys_hash: string } | undefined;
  return { frontier, keys: keys ? { seq: Number(keys.keys_seq), hash: keys.keys_hash } : { seq: 0, hash: '0'.repeat(64) } };
}

/** The scopes whose key lock another batch holds: their submissions are in flight. */
function inFlightOf(begun: pg.QueryResult | pg.QueryResult[], keyLocks: Map<string, string>): Set<string> {
  const refused = new Set(
    resultsOf(begun)
      .flatMap((r) => (r.fields.some((f) => f.name === 'key_lock') ? (r.rows as { key_lock: string; locked: boolean }[]) : []))
      .flatMap((r) => (r.locked ? [] : [r.key_lock])),
  );
  return new Set([...keyLocks].flatMap(([scope, lock]) => (refused.has(lock) ? [scope] : [])));
}

/** The plan's starting state, and the key log's head that the batch's checkpoint names. */
export async function batchStart(
  client: pg.PoolClient,
  begun: pg.QueryResult | pg.QueryResult[],
  submissions: readonly Submission[],
  keyLocks: Map<string, string>,
  signs: boolean,
): Promise<{ start: PlanState; keys: BatchToSign['keys'] }> {
  const head = requireHeadAtNewest(begun);
  const { frontier, keys } = treeStateOf(begun);
  const start: PlanState = {
    seq: head.seq,
    hash: head.hash,
    entries: await entriesFrom(client, (resultWith(begun, 'log_version')?.rows ?? []) as EntryRow[]),
    records: await loadRecords(client, batchScopes(submissions)),
    inFlight: inFlightOf(begun, keyLocks),
    frontier,
    ...(signs ? { signs: true } : {}),
  };
  return { start, keys };
}
