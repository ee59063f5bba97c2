// The one batch planner both adapters write with. Given the chain's head, the entries of
// the batch's pets and the stored records of its keys, all read inside the batch's
// transaction, it decides each submission in order as a savepoint would: one that
// conflicts fails alone, and later ones on its pets fail with it (they were decided
// against its result, which never happened). What it returns is the rows to write (each
// event with its seq and hash-chain link, each entry's final row, each record) and the
// outcomes; the adapter only runs SQL. Pure: nothing here reads or writes a database.
// Given the caller's decideAgain, a stale submission is decided again here, under the
// batch's lock, instead of failing (plan-submission.ts).
// Each submission is decided in plan-submission.ts, the tree grown in plan-tree.ts.
import type { IdempotencyRecord, IdempotencyScope } from '../idempotency.ts';
import type { DecideAgain, Submission, SubmissionOutcome } from '../event-log.ts';
import type { Entry } from '../../domain/apply-event.ts';
import type { PendingReceipt } from '../receipts/receipts.ts';
import { decideSubmission, type EventRow, type PlanDraft } from './plan-submission.ts';
import { treeAfter, type PlanTree } from './plan-tree.ts';
import type { AdjustmentWrite } from '../adjustment-rows.ts';

/** The chain head, the entries and the idempotency records as a batch has moved them so far. */
export interface PlanState {
  seq: bigint;
  hash: string;
  entries: Map<bigint, Entry>;
  /** By scopeId: the records stored for the batch's keys, expired ones included. */
  records: Map<string, IdempotencyRecord>;
  /** By scopeId: the batch's keys another batch is processing (PostgreSQL's key locks). */
  inFlight?: ReadonlySet<string>;
  /** Whether the store signs receipts: the plan then lists the events to sign
   * (BatchPlan.receipts), which the adapter has signed off its critical path (receipts.ts). */
  signs?: boolean;
  /** The Merkle tree's frontier (merkle.ts frontierNodes of seq leaves), by nodeId: all a
   * new leaf is hashed with. */
  frontier: ReadonlyMap<string, Buffer>;
}

export { nodeId } from '../../support/merkle.ts';

export interface BatchPlan {
  outcomes: SubmissionOutcome[];
  /** The events to insert, in seq order. */
  events: EventRow[];
  /** The stock_adjustments rows of the events, in seq order. */
  adjustments: AdjustmentWrite[];
  /** The final row of every entry the events changed. */
  entries: Entry[];
  /** The records to store (each in place of an expired one with its key, if any). */
  records: IdempotencyRecord[];
  /** The receipts to sign, one per submission that appended: its last event, with its
   * inclusion path in the plan's tree. */
  receipts: PendingReceipt[];
  /** The Merkle tree's nodes the events complete, written with them. */
  tree: PlanTree;
  /** The state after the plan's writes. */
  next: PlanState;
}

/** Whether a plan writes anything. */
export function writesAnything(plan: BatchPlan): boolean {
  return plan.events.length > 0 || plan.records.length > 0;
}

/** The pets whose entries the batch's submissions are decided against. */
export function batchPets(submissions: readonly Submission[]): bigint[] {
  return [
    ...new Set(submissions.flatMap((s) => [...s.appends.map((a) => a.petId), ...(s.idempotency ? [s.idempotency.decidedOn.petId] : [])])),
  ];
}

/** The keys whose records the batch's submissions store. */
export function batchScopes(submissions: readonly Submission[]): IdempotencyScope[] {
  return submissions.flatMap((s) => (s.idempotency ? [s.idempotency.record] : []));
}

/** How a plan of some of a batch's submissions decides them. */
interface PlanOptions {
  /** The pets on which an earlier submission failed, and why, carried across calls (one
   * at a time after a failed write). */
  failedPets?: Map<bigint, unknown>;
  /** The caller's way to decide a stale submission again (BatchOptions.decideAgain). */
  decideAgain?: DecideAgain | undefined;
  /** The index in the batch of the first submission planned (one at a time: its own). */
  first?: number;
}

/** Decides submissions in order against state; state is not changed. */
export function planBatch(
  submissions: readonly Submission[],
  state: PlanState,
  { failedPets = new Map<bigint, unknown>(), decideAgain, first = 0 }: PlanOptions = {},
): BatchPlan {
  const draft: PlanDraft = {
    seq: state.seq,
    prevHash: state.hash,
    entries: new Map(state.entries),
    records: new Map(state.records),
    events: [],
    adjustments: [],
    changed: new Map(),
    stored: [],
    receipts: [],
  };
  const context = { failedPets, inFlight: state.inFlight, signs: state.signs === true };
  const outcomes = submissions.map((submission, k) =>
    decideSubmission(draft, submission, {
      ...context,
      decideAgain: decideAgain && ((entry: (petId: bigint) => Entry | undefined) => decideAgain(first + k, entry)),
    }),
  );
  const { tree, frontier } = treeAfter(Number(state.seq), state.frontier, draft.events, draft.receipts);
  const next = {
    seq: draft.seq,
    hash: draft.prevHash,
    entries: draft.entries,
    records: draft.records,
    frontier,
    ...(state.inFlight ? { inFlight: state.inFlight } : {}),
    ...(state.signs ? { signs: state.signs } : {}),
  };
  return {
    outcomes,
    events: draft.events,
    adjustments: draft.adjustments,
    entries: [...draft.changed.values()],
    records: draft.stored,
    receipts: draft.receipts,
    tree,
    next,
  };
}

/**
 * After a batch's write failed (one submission's rows broke a constraint or found no
 * room) and was undone: the submissions one at a time, so that exactly the ones that
 * fail fail, with their own error. Yields each one's plan; the adapter writes it (in a
 * savepoint) and sends back what it raised ({ error }), or undefined when it was written.
 */
export function* oneAtATime(
  submissions: readonly Submission[],
  start: PlanState,
  decideAgain?: DecideAgain,
): Generator<BatchPlan, SubmissionOutcome[], { error: unknown } | undefined> {
  let state = start;
  const failedPets = new Map<bigint, unknown>();
  const outcomes: SubmissionOutcome[] = [];
  for (const [first, submission] of submissions.entries()) {
    const single = planBatch([submission], state, { failedPets, decideAgain, first });
    const outcome = single.outcomes[0]!;
    if (!writesAnything(single)) {
      outcomes.push(outcome);
      continue;
    }
    const failed = yield single;
    if (failed === undefined) {
      state = single.next;
      outcomes.push(outcome);
    } else {
      for (const a of submission.appends) failedPets.set(a.petId, failed.error);
      outcomes.push({ ok: false, error: failed.error });
    }
  }
  return outcomes;
}
