// The chain head on PostgreSQL, as every write begins: locked FOR UPDATE (appends are
// serialized across instances by that row lock) and checked against the newest event,
// else nothing is written.
import type pg from 'pg';
import { GENESIS_HASH } from '../../hash-chain.ts';
import { ChainHeadMismatch } from '../../health.ts';

export interface Head {
  seq: bigint;
  hash: string;
}

// The newest event, beside the chain head in the same round trip: the head must be at it.
export const NEWEST = 'SELECT seq AS newest_seq, hash AS newest_hash FROM events ORDER BY seq DESC LIMIT 1';

/**
 * BEGIN with a lock timeout and the chain head locked: the first round trip of every
 * write. keyLocks: the advisory locks of Idempotency-Keys to try first (never waited for).
 */
export function beginLocked(waitMs: number, keyLocks: readonly bigint[] = []): string {
  // The locks are numbers this process computed, not text from a client.
  const tryKeys =
    keyLocks.length === 0
      ? ''
      : ` SELECT k::text AS key_lock, pg_try_advisory_xact_lock(k) AS locked FROM unnest(ARRAY[${keyLocks.join(', ')}]::bigint[]) AS k;`;
  return `BEGIN; SET LOCAL lock_timeout = ${Math.max(1, Math.floor(waitMs))};${tryKeys} SELECT seq, hash FROM chain_head FOR UPDATE`;
}

/** The results of a round trip of several statements, as a list. */
export function resultsOf(result: pg.QueryResult | pg.QueryResult[]): pg.QueryResult[] {
  return Array.isArray(result) ? result : [result];
}

/** The result of the round trip's SELECT that has field among its columns. */
export function resultWith(result: pg.QueryResult | pg.QueryResult[], field: string): pg.QueryResult | undefined {
  return resultsOf(result).find((r) => r.command === 'SELECT' && r.fields.some((f) => f.name === field));
}

/** Throws ChainHeadMismatch unless the chain head read in a round trip (a SELECT of its seq
 * and hash) is at the newest event that NEWEST read in it (none: the head is the genesis). */
export function requireHeadAtNewest(result: pg.QueryResult | pg.QueryResult[]): Head {
  const head = resultWith(result, 'seq')!.rows[0] as Head;
  const row = resultWith(result, 'newest_seq')?.rows[0] as { newest_seq: bigint; newest_hash: string } | undefined;
  const newest = row ? { seq: row.newest_seq, hash: row.newest_hash } : { seq: 0n, hash: GENESIS_HASH };
  if (head.seq !== newest.seq || head.hash !== newest.hash) throw new ChainHeadMismatch(head, newest);
  return head;
}
