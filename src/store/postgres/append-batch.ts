// A batch of submissions in ONE transaction and four round trips, however many requests
// it holds: (1) BEGIN, the lock timeout and the chain head locked FOR UPDATE (and found at the
// newest event, else nothing is written), (2) the
// entries of the batch's pets, read after the lock so no other instance can change them
// meanwhile, (3) every event inserted, every entry upserted and the head moved on in one
// statement (arrays through unnest), (4) COMMIT. The batch planner (batch-plan.ts)
// decides the submissions and builds the rows and hashes, as it does for SQLite, so both
// stores give the same chain; this file only runs the SQL. A batch holds the
// Idempotency-Keys of its submissions (advisory locks, idempotency.ts) from its first
// round trip, before it waits for the chain head; a submission whose key another batch
// holds is refused (IdempotencyKeyInFlight) unless its answer is stored by then.
import type pg from 'pg';
import { batchPets, batchScopes, nodeId, oneAtATime, planBatch, writesAnything, type BatchPlan, type PlanState } from '../batch-plan.ts';
import {
  RECORD_COLUMNS,
  recordOfRow,
  rowOfRecord,
  scopeId,
  type IdempotencyRecord,
  type IdempotencyScope,
  type RecordRow,
} from '../idempotency.ts';
import { CommitUnconfirmed, type Appended, type BatchOptions, type Outcome, type Submission } from '../event-log.ts';
import { entryColumns, upsertEntries } from './projection.ts';
import { CHANGES_CHANNEL } from './changes.ts';
import { inTransaction } from './transactions.ts';
import { loadEntries } from './entries.ts';
import { keyLockOf } from './idempotency.ts';
import { GENESIS_HASH } from '../hash-chain.ts';
import { ChainHeadMismatch } from '../health.ts';
import type { BatchToSign, ReceiptSigning, Ticket } from '../receipts.ts';

/** The lock wait when the caller sets no deadline (operator commands). */
const DEFAULT_LOCK_WAIT_MS = 5_000;

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
UPDATE chain_head SET seq = $16, hash = $17, changes = changes + 1
RETURNING changes, pg_notify('${CHANGES_CHANNEL}', changes::text)`;

// Read in the first round trip, under the chain head's lock: the Merkle tree's frontier
// for the head's size (the complete subtree ending at each set bit of the size, whose
// index at level n is (size >> n) - 1), and the key log's head, which checkpoints name.
const FRONTIER = `SELECT t.level, t.idx, t.hash FROM chain_head h CROSS JOIN generate_series(0, 62) AS l(n)
  JOIN tree_nodes t ON t.level = l.n AND t.idx = (h.seq >> l.n) - 1 WHERE ((h.seq >> l.n) & 1) = 1`;
const KEYS_HEAD = 'SELECT seq AS keys_seq, hash AS keys_hash FROM key_chain_head';
// The newest event, beside the chain head in the same round trip: the head must be at it.
export const NEWEST = 'SELECT seq AS newest_seq, hash AS newest_hash FROM events ORDER BY seq DESC LIMIT 1';

/** Throws ChainHeadMismatch unless the chain head read in a round trip (a SELECT of its seq
 * and hash) is at the newest event that NEWEST read in it (none: the head is the genesis). */
export function requireHeadAtNewest(result: pg.QueryResult | pg.QueryResult[]): Head {
  const head = headOf(result);
  const row = resultWith(result, 'newest_seq')?.rows[0] as { newest_seq: bigint; newest_hash: string } | undefined;
  const newest = row ? { seq: row.newest_seq, hash: row.newest_hash } : { seq: 0n, hash: GENESIS_HASH };
  if (head.seq !== newest.seq || head.hash !== newest.hash) throw new ChainHeadMismatch(head, newest);
  return head;
}

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

export interface Head {
  seq: bigint;
  hash: string;
}

function headOf(result: pg.QueryResult | pg.QueryResult[]): Head {
  const selected = (Array.isArray(result) ? result : [result]).find(
    (r) => r.command === 'SELECT' && r.fields.some((f) => f.name === 'seq'),
  );
  return selected!.rows[0] as Head;
}

function resultWith(result: pg.QueryResult | pg.QueryResult[], field: string): pg.QueryResult | undefined {
  return (Array.isArray(result) ? result : [result]).find((r) => r.command === 'SELECT' && r.fields.some((f) => f.name === field));
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
  ];
}

export async function appendBatch(
  pool: pg.Pool,
  submissions: readonly Submission[],
  options: BatchOptions,
  onCommitted: (changes: bigint) => void,
  signing?: ReceiptSigning,
): Promise<Outcome<Appended[]>[]> {
  const waitMs = options.waitUntil === undefined ? DEFAULT_LOCK_WAIT_MS : options.waitUntil - Date.now();
  let changes: bigint | undefined;
  // The chain's new head as the batch's writes left it: where to look for the batch
  // later if its commit cannot be confirmed.
  let head: { seq: bigint; hash: string } | undefined;
  // The batch's receipts, signed on the signing thread while its rows travel to the
  // server and its COMMIT is made; taken after the COMMIT, or before the write when a
  // stored 200 must carry its receipt.
  let ticket: Ticket | undefined;
  const write = async (client: pg.PoolClient, plan: BatchPlan) => {
    if (plan.records.length > 0) await ticket?.take();
    changes = (await client.query<{ changes: bigint }>(WRITE, paramsOf(plan))).rows[0]!.changes;
    head = { seq: plan.next.seq, hash: plan.next.hash };
  };
  const bounds = options.waitUntil === undefined ? undefined : { deadline: options.waitUntil, onCommitting: options.onCommitting };
  // By scopeId: each key's advisory lock.
  const keyLocks = new Map(batchScopes(submissions).map((s) => [scopeId(s), String(keyLockOf(s))]));
  const outcomes = await inTransaction(
    pool,
    `${beginLocked(waitMs, [...new Set(keyLocks.values())].map(BigInt))}; ${FRONTIER}; ${KEYS_HEAD}; ${NEWEST}; SAVEPOINT batch`,
    async (client, begun) => {
      const head = requireHeadAtNewest(begun);
      const { frontier, keys } = treeStateOf(begun);
      const toSign = (plan: BatchPlan): BatchToSign => ({ receipts: plan.receipts, tree: plan.tree, keys });
      const refused = new Set(
        (Array.isArray(begun) ? begun : [begun])
          .flatMap((r) => (r.fields.some((f) => f.name === 'key_lock') ? (r.rows as { key_lock: string; locked: boolean }[]) : []))
          .flatMap((r) => (r.locked ? [] : [r.key_lock])),
      );
      const start: PlanState = {
        seq: head.seq,
        hash: head.hash,
        entries: await loadEntries(client, batchPets(submissions)),
        records: await loadRecords(client, batchScopes(submissions)),
        inFlight: new Set([...keyLocks].flatMap(([scope, lock]) => (refused.has(lock) ? [scope] : []))),
        frontier,
        ...(signing ? { signs: true } : {}),
      };
      const whole = planBatch(submissions, start);
      if (!writesAnything(whole)) return whole.outcomes;
      ticket = signing?.start(toSign(whole));
      try {
        await write(client, whole);
        return whole.outcomes;
      } catch (error) {
        // One submission's rows broke a constraint or found no room: undo the statement
        // and write the submissions one at a time, each in a savepoint, so that exactly
        // the ones that fail fail (with their own error), as on SQLite. Had the
        // connection or the transaction been lost, this rollback fails and the batch with it.
        await client.query('ROLLBACK TO SAVEPOINT batch').catch(() => Promise.reject(error as Error));
        ticket = undefined;
        return oneByOne(client, submissions, start, async (c, plan) => {
          signing?.inPlace(toSign(plan));
          await write(c, plan);
        });
      }
    },
    bounds,
  ).catch((error: unknown) => {
    // A commit whose answer was lost is looked up later by the events it would have added.
    if (error instanceof CommitUnconfirmed && head) {
      throw new CommitUnconfirmed({ ...error.batch, ...head }, { cause: error.cause });
    }
    throw error;
  });
  if (changes !== undefined) onCommitted(changes);
  await ticket?.take();
  return outcomes;
}

async function oneByOne(
  client: pg.PoolClient,
  submissions: readonly Submission[],
  start: PlanState,
  write: (client: pg.PoolClient, plan: BatchPlan) => Promise<void>,
): Promise<Outcome<Appended[]>[]> {
  const steps = oneAtATime(submissions, start);
  for (let step = steps.next(); ;) {
    if (step.done) return step.value;
    await client.query('SAVEPOINT submission');
    try {
      await write(client, step.value);
      await client.query('RELEASE SAVEPOINT submission');
      step = steps.next(undefined);
    } catch (error) {
      await client.query('ROLLBACK TO SAVEPOINT submission').catch(() => Promise.reject(error as Error));
      step = steps.next({ error });
    }
  }
}

const RECORDS = `SELECT ${RECORD_COLUMNS.join(', ')} FROM idempotency_keys
  WHERE (api_key, idempotency_key) IN (SELECT * FROM unnest($1::text[], $2::text[]))`;

/** The stored records of the batch's keys, read under the chain head's lock (every writer
 * of records holds it), so that no other instance can store one of them meanwhile. */
async function loadRecords(client: pg.PoolClient, scopes: readonly IdempotencyScope[]): Promise<Map<string, IdempotencyRecord>> {
  const found = new Map<string, IdempotencyRecord>();
  if (scopes.length === 0) return found;
  const { rows } = await client.query<RecordRow>(RECORDS, [scopes.map((s) => s.apiKey), scopes.map((s) => s.key)]);
  for (const row of rows) {
    const record = recordOfRow(row);
    found.set(scopeId(record), record);
  }
  return found;
}
