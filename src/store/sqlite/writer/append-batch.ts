// The write side of the event log: a batch of submissions in one IMMEDIATE transaction.
// The batch's starting state is read once (batch-start.ts); the batch planner
// (batch-plan.ts) decides the submissions and builds the rows and hashes, as it does for
// PostgreSQL; plan-rows.ts only runs the SQL. Should the writes fail halfway (a
// constraint, a full disk), the transaction is rolled back and the batch redone in a new
// one, one submission at a time, each in a savepoint, so that exactly the ones that fail
// fail. The whole batch is not written in a savepoint of its own: a savepoint copies
// every page the batch changes into a sub-journal, which costs more than the rare redo.
import type { Transaction } from 'better-sqlite3';
import type { Db } from '../database.ts';
import { oneAtATime, planBatch, writesAnything, type BatchPlan, type PlanState } from '../../plan/batch-plan.ts';
import { CommitUnconfirmed, type BatchOptions, type Submission, type SubmissionOutcome } from '../../event-log.ts';
import { enterCommit, type CommitGate } from '../../commit-gate.ts';
import { DeadlinePassed } from '../../health.ts';
import type { IdempotencyWriter } from '../idempotency.ts';
import type { ProjectionTable } from '../projection.ts';
import type { BatchToSign, ReceiptSigning, Ticket } from '../../receipts/receipts.ts';
import { makeBatchStart } from './batch-start.ts';
import { makeLockWait } from './lock-wait.ts';
import { makePlanRows } from './plan-rows.ts';

/** A batch's writes failed halfway: its transaction is rolled back and the batch redone one submission at a time. */
class RedoOneByOne extends Error {
  override name = 'RedoOneByOne';
  constructor(cause: unknown) {
    super('a write of the batch failed: redone one submission at a time', { cause });
  }
}

interface EventWriter {
  appendBatch(submissions: readonly Submission[], options?: BatchOptions): SubmissionOutcome[];
}

/** The last event this batch wrote, and whether its transaction function is done (so
 * that what fails next is the COMMIT itself). */
interface Progress {
  written?: { seq: bigint; hash: string };
  committing: boolean;
}

/** What the two ways of writing a batch share. */
interface BatchWrites {
  db: Db;
  progress: Progress;
  write(plan: BatchPlan, ticket?: Ticket): void;
  /** The same, nested inside the batch's transaction: better-sqlite3 runs it in a
   * SAVEPOINT, which it rolls back if it throws. */
  inSavepoint: Transaction<(plan: BatchPlan) => void>;
  toSign(plan: BatchPlan): BatchToSign;
}

type Done = { outcomes: SubmissionOutcome[]; ticket?: Ticket };

/** The batch's writes at once; a write that fails halfway asks for the batch again, one submission at a time. */
function wholeBatch(writes: BatchWrites, submissions: readonly Submission[], start: PlanState, signs: ReceiptSigning | undefined): Done {
  const whole = planBatch(submissions, start);
  let ticket: Ticket | undefined;
  if (writesAnything(whole)) {
    ticket = signs?.start(writes.toSign(whole));
    try {
      writes.write(whole, ticket);
    } catch (error) {
      // Some errors (a full disk, an I/O error) make SQLite roll back the whole
      // transaction: nothing of the batch is left to save. Otherwise this rolls it back.
      if (!writes.db.inTransaction) throw error;
      throw new RedoOneByOne(error);
    }
  }
  return { outcomes: whole.outcomes, ...(ticket ? { ticket } : {}) };
}

function oneByOne(
  writes: BatchWrites,
  submissions: readonly Submission[],
  start: PlanState,
  signs: ReceiptSigning | undefined,
): SubmissionOutcome[] {
  writes.progress.written = undefined;
  const steps = oneAtATime(submissions, start);
  for (let step = steps.next(); ;) {
    if (step.done) return step.value;
    let failed: { error: unknown } | undefined;
    // Rare (a batch's write failed): signed here, before its rows are written.
    signs?.inPlace(writes.toSign(step.value));
    try {
      writes.inSavepoint(step.value);
    } catch (error) {
      if (!writes.db.inTransaction) throw error;
      failed = { error };
    }
    step = steps.next(failed);
  }
}

/** beforeCommit runs inside the batch's transaction, last: throwing rolls all of it back.
 * signing: how the batch's writes are signed, once the store has a signing key. A batch's
 * receipts are signed (receipts.ts) while its rows are written and its COMMIT syncs; its
 * idempotency records wait for them, and its answers leave only after the COMMIT. */
export function makeEventWriter(
  db: Db,
  projection: ProjectionTable,
  idempotency: IdempotencyWriter,
  beforeCommit: () => void = () => {},
  signing: () => ReceiptSigning | undefined = () => undefined,
): EventWriter {
  const start = makeBatchStart(db, projection, idempotency);
  const writeRows = makePlanRows(db, projection, idempotency);
  const progress: Progress = { committing: false };
  const write = (plan: BatchPlan, ticket?: Ticket): void => {
    writeRows(plan, ticket);
    if (plan.events.length > 0) progress.written = { seq: plan.next.seq, hash: plan.next.hash };
  };
  const writes: BatchWrites = { db, progress, write, inSavepoint: db.transaction(write), toSign: start.toSign };

  const batch = db.transaction((submissions: readonly Submission[], each: boolean, gate: CommitGate | undefined): Done => {
    const signs = signing();
    const state = start.planState(submissions, signs !== undefined);
    const done = each ? { outcomes: oneByOne(writes, submissions, state, signs) } : wholeBatch(writes, submissions, state, signs);
    beforeCommit();
    // Given up (its clients answered that nothing was written): it rolls back.
    if (gate && !enterCommit(gate)) throw new DeadlinePassed();
    progress.committing = true;
    return done;
  });

  /**
   * The batch in its transaction. A COMMIT that fails with an I/O error (the sync of the
   * log failed) leaves the outcome unknown: the frames may be in the log file, and a
   * later recovery may find them whole. That is CommitUnconfirmed, never "nothing
   * written"; any other failure of COMMIT (SQLITE_BUSY, a full disk) rolls back.
   */
  const attempt = (submissions: readonly Submission[], each: boolean, gate: CommitGate | undefined): Done => {
    progress.written = undefined;
    progress.committing = false;
    try {
      return batch.immediate(submissions, each, gate);
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (progress.committing && typeof code === 'string' && code.startsWith('SQLITE_IOERR')) {
        throw new CommitUnconfirmed(progress.written ?? {}, { cause: error });
      }
      throw error;
    }
  };
  const run = (submissions: readonly Submission[], gate: CommitGate | undefined): SubmissionOutcome[] => {
    let done: Done;
    try {
      done = attempt(submissions, false, gate);
    } catch (error) {
      if (!(error instanceof RedoOneByOne)) throw error;
      done = attempt(submissions, true, gate);
    }
    // Committed: the receipts, signed meanwhile, go with the answers.
    done.ticket?.placeReceiptsSync();
    return done.outcomes;
  };

  // IMMEDIATE: take the write lock at BEGIN, so that another process's writer makes
  // us wait (busy_timeout) rather than fail halfway. The wait ends at the batch's
  // deadline (lock-wait.ts).
  const waitingUntil = makeLockWait(db);
  return { appendBatch: (submissions, options = {}) => waitingUntil(options.waitUntil, () => run(submissions, options.gate)) };
}
