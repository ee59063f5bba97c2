// A batch of submissions in ONE transaction and three round trips, however many requests
// it holds: (1) BEGIN, the lock timeout, the chain head locked FOR UPDATE (and found at
// the newest event, else nothing is written) and, after the lock so no other instance
// can change them meanwhile, the entries of the batch's pets (batch-start.ts; with
// Idempotency-Keys, their stored answers take one more round trip), (2) every event
// inserted, every entry upserted and the head moved on in one statement (batch-write.ts),
// (3) COMMIT. The batch planner (batch-plan.ts) decides the submissions
// and builds the rows and hashes, as it does for SQLite, so both stores give the same
// chain; these modules only run the SQL. A submission that another instance's commit made
// stale while this batch waited for the lock is decided again by the caller's
// decideAgain between (1) and (2), against the entries read under the lock, so that it
// cannot lose to that instance again: no round trip is added. A batch holds the Idempotency-Keys of its
// submissions (advisory locks, idempotency.ts) from its first round trip, before it
// waits for the chain head; a submission whose key another batch holds is refused
// (key_in_flight) unless its answer is stored by then.
import type pg from 'pg';
import { oneAtATime, planBatch, writesAnything, type BatchPlan } from '../../plan/batch-plan.ts';
import { CommitUnconfirmed, type BatchOptions, type Submission, type SubmissionOutcome } from '../../event-log.ts';
import type { ReceiptSigning, Ticket } from '../../receipts/receipts.ts';
import { batchStart, beginBatch, keyLocksOf } from './batch-start.ts';
import { writePlan } from './batch-write.ts';
import type { Head } from './chain-head.ts';
import { inTransaction } from '../transactions.ts';

/** The lock wait when the caller sets no deadline (operator commands). */
const DEFAULT_LOCK_WAIT_MS = 5_000;

/** What a batch's writes left, read once its transaction has ended. */
interface Written {
  /** The chain head's change count after the write, told to the instance at COMMIT. */
  changes?: bigint;
  /** The chain's new head: where to look for the batch later if its commit cannot be confirmed. */
  head?: Head;
  /** The batch's receipts, signed on the signing thread while its rows travel to the
   * server and its COMMIT is made; taken after the COMMIT, or before the write when a
   * stored 200 must carry its receipt. */
  ticket?: Ticket;
}

async function write(client: pg.ClientBase, plan: BatchPlan, written: Written): Promise<void> {
  if (plan.records.length > 0) await written.ticket?.placeReceipts();
  written.changes = await writePlan(client, plan);
  written.head = { seq: plan.next.seq, hash: plan.next.hash };
}

/** The transaction's work: the batch planned whole and written in one statement, or one
 * submission at a time when the whole fails. */
async function planAndWrite(
  client: pg.PoolClient,
  begun: pg.QueryResult | pg.QueryResult[],
  submissions: readonly Submission[],
  keyLocks: Map<string, string>,
  options: BatchOptions,
  signing: ReceiptSigning | undefined,
  written: Written,
): Promise<SubmissionOutcome[]> {
  const { start, keys } = await batchStart(client, begun, submissions, keyLocks, signing !== undefined);
  const toSign = (plan: BatchPlan) => ({ receipts: plan.receipts, tree: plan.tree, keys });
  const { decideAgain } = options;
  const whole = planBatch(submissions, start, { decideAgain });
  if (!writesAnything(whole)) return whole.outcomes;
  written.ticket = signing?.start(toSign(whole));
  try {
    await write(client, whole, written);
    return whole.outcomes;
  } catch (error) {
    // One submission's rows broke a constraint or found no room: undo the statement
    // and write the submissions one at a time, each in a savepoint, so that exactly
    // the ones that fail fail (with their own error), as on SQLite. Had the
    // connection or the transaction been lost, this rollback fails and the batch with it.
    await client.query('ROLLBACK TO SAVEPOINT batch').catch(() => Promise.reject(error as Error));
    written.ticket = undefined;
    const steps = oneAtATime(submissions, start, decideAgain);
    return oneByOne(client, steps, async (plan) => {
      signing?.inPlace(toSign(plan));
      await write(client, plan, written);
    });
  }
}

async function oneByOne(
  client: pg.PoolClient,
  steps: ReturnType<typeof oneAtATime>,
  writeStep: (plan: BatchPlan) => Promise<void>,
): Promise<SubmissionOutcome[]> {
  for (let step = steps.next(); ;) {
    if (step.done) return step.value;
    await client.query('SAVEPOINT submission');
    try {
      await writeStep(step.value);
      await client.query('RELEASE SAVEPOINT submission');
      step = steps.next(undefined);
    } catch (error) {
      await client.query('ROLLBACK TO SAVEPOINT submission').catch(() => Promise.reject(error as Error));
      step = steps.next({ error });
    }
  }
}

export async function appendBatch(
  pool: pg.Pool,
  submissions: readonly Submission[],
  options: BatchOptions,
  onCommitted: (changes: bigint) => void,
  signing?: ReceiptSigning,
): Promise<SubmissionOutcome[]> {
  const waitMs = options.waitUntil === undefined ? DEFAULT_LOCK_WAIT_MS : options.waitUntil - Date.now();
  const bounds = options.waitUntil === undefined ? undefined : { deadline: options.waitUntil, gate: options.gate };
  const keyLocks = keyLocksOf(submissions);
  const written: Written = {};
  const outcomes = await inTransaction(
    pool,
    beginBatch(waitMs, keyLocks, submissions),
    (client, begun) => planAndWrite(client, begun, submissions, keyLocks, options, signing, written),
    bounds,
  ).catch((error: unknown) => {
    // A commit whose answer was lost is looked up later by the events it would have added.
    if (error instanceof CommitUnconfirmed && written.head) {
      throw new CommitUnconfirmed({ ...error.batch, ...written.head }, { cause: error.cause });
    }
    throw error;
  });
  if (written.changes !== undefined) onCommitted(written.changes);
  await written.ticket?.placeReceipts();
  return outcomes;
}
