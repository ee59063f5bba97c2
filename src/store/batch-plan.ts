// The one batch planner both adapters write with. Given the chain's head, the entries of
// the batch's pets and the stored records of its keys, all read inside the batch's
// transaction, it decides each submission in order as a savepoint would: one that
// conflicts fails alone, and later ones on its pets fail with it (they were decided
// against its result, which never happened). What it returns is the rows to write (each
// event with its seq and hash-chain link, each entry's final row, each record) and the
// outcomes; the adapter only runs SQL. Pure: nothing here reads or writes a database.
import { encodeData } from '../domain/codec.ts';
import type { RecordedEvent } from '../domain/events.ts';
import { eventHash } from './hash-chain.ts';
import { IdempotencyKeyInFlight, IdempotencyKeyTaken, scopeId, type IdempotencyRecord, type IdempotencyScope } from './idempotency.ts';
import { VersionConflict, type Appended, type Outcome, type Submission } from './event-log.ts';
import { applyEvent, type Entry } from '../domain/apply-event.ts';
import type { PendingReceipt } from './receipts.ts';
import { eventLeaf, extendTree, inclusionRanges, proofHashes, treeRoot, type TreeNode } from '../support/merkle.ts';

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

export { nodeId } from '../support/merkle.ts';

/** The tree of a plan's events: the nodes they complete, and its size and root after them. */
export interface PlanTree {
  nodes: TreeNode[];
  size: number;
  /** Undefined when the plan appends no event. */
  root?: Buffer;
}

/** An event as the log stores it, with its chain columns. */
export interface EventRow {
  seq: bigint;
  petId: bigint;
  version: number;
  type: string;
  data: string;
  actor: string;
  requestId: string;
  recordedAt: string;
  prevHash: string;
  hash: string;
}

export interface BatchPlan {
  outcomes: Outcome<Appended[]>[];
  /** The events to insert, in seq order. */
  events: EventRow[];
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

/**
 * Decides submissions in order against state. failedPets carries the pets on which an
 * earlier submission failed, and why, across calls (one at a time after a failed
 * write); state is not changed.
 */
export function planBatch(submissions: readonly Submission[], state: PlanState, failedPets = new Map<bigint, unknown>()): BatchPlan {
  const entries = new Map(state.entries);
  const records = new Map(state.records);
  const events: EventRow[] = [];
  const stored: IdempotencyRecord[] = [];
  const receipts: PendingReceipt[] = [];
  const changed = new Map<bigint, Entry>();
  let seq = state.seq;
  let prevHash = state.hash;
  const outcomes = submissions.map(({ meta, recordedAt, appends, idempotency }): Outcome<Appended[]> => {
    const stale = appends.find((a) => failedPets.has(a.petId));
    if (stale) {
      const cause = failedPets.get(stale.petId);
      return {
        ok: false,
        error: cause instanceof VersionConflict ? new VersionConflict(stale.petId, stale.expectedVersion, undefined) : cause,
      };
    }
    if (idempotency) {
      const { record, decidedOn } = idempotency;
      const taken = records.get(scopeId(record));
      if (taken && taken.expiresAt > record.createdAt) {
        // Nothing written: later submissions on these pets were decided against a
        // result that did not happen, and are decided again.
        for (const a of appends) failedPets.set(a.petId, new VersionConflict(a.petId, a.expectedVersion, undefined));
        return { ok: false, error: new IdempotencyKeyTaken(taken) };
      }
      // Being processed by another batch and not stored yet: refused, not waited for.
      if (state.inFlight?.has(scopeId(record))) {
        for (const a of appends) failedPets.set(a.petId, new VersionConflict(a.petId, a.expectedVersion, undefined));
        return { ok: false, error: new IdempotencyKeyInFlight() };
      }
      const actual = entries.get(decidedOn.petId)?.version ?? 0;
      if (appends.length === 0 && actual !== decidedOn.version) {
        return { ok: false, error: new VersionConflict(decidedOn.petId, decidedOn.version, actual) };
      }
    }
    // Each append is checked against the entry as the submission's earlier appends left
    // it; a conflict anywhere undoes the whole submission.
    const mark = { events: events.length, seq, prevHash };
    // The entries this submission touched, as they were before it.
    const touched = new Map<bigint, [Entry | undefined, Entry | undefined]>();
    const appended: Appended[] = [];
    for (const { petId, expectedVersion, events: decided } of appends) {
      let entry = entries.get(petId);
      if ((entry?.version ?? 0) !== expectedVersion) {
        const error = new VersionConflict(petId, expectedVersion, entry?.version ?? 0);
        events.length = mark.events;
        ({ seq, prevHash } = mark);
        for (const [pet, [before, changedBefore]] of touched) {
          if (before) entries.set(pet, before);
          else entries.delete(pet);
          if (changedBefore) changed.set(pet, changedBefore);
          else changed.delete(pet);
        }
        for (const a of appends) failedPets.set(a.petId, error);
        return { ok: false, error };
      }
      const recordedEvents: RecordedEvent[] = [];
      for (const event of decided) {
        seq += 1n;
        const version = (entry?.version ?? 0) + 1;
        const fields = {
          prevHash,
          seq,
          petId,
          version,
          type: event.type,
          data: encodeData(event),
          actor: meta.actor,
          requestId: meta.requestId,
          recordedAt,
        };
        const hash = eventHash(fields);
        events.push({ ...fields, hash });
        prevHash = hash;
        const recorded: RecordedEvent = { ...event, ...meta, seq: Number(seq), petId, version, recordedAt };
        entry = applyEvent(entry, recorded);
        recordedEvents.push(recorded);
      }
      if (!entry) throw new Error(`append for pet ${petId} decided nothing`);
      if (!touched.has(petId)) touched.set(petId, [entries.get(petId), changed.get(petId)]);
      entries.set(petId, entry);
      changed.set(petId, entry);
      appended.push({ entry, events: recordedEvents });
    }
    const last = appended.at(-1);
    const signed = last !== undefined && state.signs === true;
    if (idempotency) {
      // Its own object: the receipt is put in it once signed, before it is written, and a
      // later submission of the batch with its key replays it from the map.
      const record = signed && idempotency.record.status === 200 ? { ...idempotency.record } : idempotency.record;
      records.set(scopeId(record), record);
      stored.push(record);
      if (signed) receipts.push({ seq, hash: prevHash, appended: last, ...(record !== idempotency.record ? { record } : {}) });
    } else if (signed) receipts.push({ seq, hash: prevHash, appended: last });
    return { ok: true, value: appended };
  });
  const { tree, frontier } = growTree(state, events, receipts);
  const next = {
    seq,
    hash: prevHash,
    entries,
    records,
    frontier,
    ...(state.inFlight ? { inFlight: state.inFlight } : {}),
    ...(state.signs ? { signs: state.signs } : {}),
  };
  return { outcomes, events, entries: [...changed.values()], records: stored, receipts, tree, next };
}

/**
 * The tree after the plan's events: the nodes they complete, its root, the frontier the
 * next plan starts from, and each receipt's inclusion path. Every node a path or the
 * root needs is new or on the old frontier, so nothing more is read.
 */
function growTree(
  state: PlanState,
  events: readonly EventRow[],
  receipts: PendingReceipt[],
): { tree: PlanTree; frontier: Map<string, Buffer> } {
  const before = Number(state.seq);
  // A batch of stored refusals alone grows nothing (and needs no frontier).
  if (events.length === 0) return { tree: { nodes: [], size: before }, frontier: new Map(state.frontier) };
  const { nodes, lookup, frontier } = extendTree(
    before,
    state.frontier,
    events.map((e) => eventLeaf(e.hash)),
  );
  const size = before + events.length;
  for (const receipt of receipts) receipt.proof = proofHashes(inclusionRanges(Number(receipt.seq) - 1, size), lookup);
  return { tree: { nodes, size, root: treeRoot(size, lookup) }, frontier };
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
): Generator<BatchPlan, Outcome<Appended[]>[], { error: unknown } | undefined> {
  let state = start;
  const failedPets = new Map<bigint, unknown>();
  const outcomes: Outcome<Appended[]>[] = [];
  for (const submission of submissions) {
    const single = planBatch([submission], state, failedPets);
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
