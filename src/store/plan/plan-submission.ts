// One submission of a batch plan, decided against what the plan's earlier submissions
// left: refused (a key taken or being processed), failed (a pet an earlier one failed on,
// a stale version), or its events chained (seq, hash) and applied to its entries, its record kept
// and its receipt listed. A conflict anywhere undoes the whole submission; given the
// caller's decideAgain, a stale submission is then decided again against the draft's
// entries, and what that gives is planned in its place. Pure but for that call.
import { encodeData } from '../../domain/codec.ts';
import type { RecordedEvent } from '../../domain/events.ts';
import { eventHash } from '../hash-chain.ts';
import { scopeId, type IdempotencyRecord } from '../idempotency.ts';
import { VersionConflict, type Appended, type DecidedAgain, type Submission, type SubmissionOutcome } from '../event-log.ts';
import { applyEvent, type Entry } from '../../domain/apply-event.ts';
import type { PendingReceipt } from '../receipts/receipts.ts';
import { adjustmentOf, type AdjustmentWrite } from '../adjustment-rows.ts';

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

/** What a plan has decided so far: the chain's head, entries and records as its
 * submissions moved them, and the rows to write. */
export interface PlanDraft {
  seq: bigint;
  prevHash: string;
  entries: Map<bigint, Entry>;
  records: Map<string, IdempotencyRecord>;
  events: EventRow[];
  /** The stock_adjustments rows of the events' QuantitySets. */
  adjustments: AdjustmentWrite[];
  /** The final row of every entry the events changed. */
  changed: Map<bigint, Entry>;
  stored: IdempotencyRecord[];
  receipts: PendingReceipt[];
}

/** Besides the draft, what a submission is decided with. */
interface DecisionContext {
  /** The pets on which an earlier submission failed, and why. */
  failedPets: Map<bigint, unknown>;
  /** By scopeId: the keys another batch is processing. */
  inFlight: ReadonlySet<string> | undefined;
  /** Whether receipts are signed. */
  signs: boolean;
  /** Decides this submission again against the draft's entries (the caller's
   * decideAgain, for this submission); undefined: a stale submission fails. */
  decideAgain?: ((entry: (petId: bigint) => Entry | undefined) => DecidedAgain) | undefined;
}

type Failed = Exclude<SubmissionOutcome, { ok: true }>;

/** The refusal of a submission before any of its events is chained, if it is refused.
 * fresh: decided against the draft itself, not against an earlier submission's result. */
function refusal(draft: PlanDraft, { appends, idempotency }: Submission, context: DecisionContext, fresh: boolean): Failed | undefined {
  const { failedPets } = context;
  const stale = fresh ? undefined : appends.find((a) => failedPets.has(a.petId));
  if (stale) {
    const cause = failedPets.get(stale.petId);
    return {
      ok: false,
      error: cause instanceof VersionConflict ? new VersionConflict(stale.petId, stale.expectedVersion, undefined) : cause,
    };
  }
  if (!idempotency) return undefined;
  const { record, decidedOn } = idempotency;
  const taken = draft.records.get(scopeId(record));
  if (taken && taken.expiresAt > record.createdAt) {
    // Nothing written: later submissions on these pets were decided against a
    // result that did not happen, and are decided again.
    for (const a of appends) failedPets.set(a.petId, new VersionConflict(a.petId, a.expectedVersion, undefined));
    return { ok: false, refused: { reason: 'key_taken', record: taken } };
  }
  // Being processed by another batch and not stored yet: refused, not waited for.
  if (context.inFlight?.has(scopeId(record))) {
    for (const a of appends) failedPets.set(a.petId, new VersionConflict(a.petId, a.expectedVersion, undefined));
    return { ok: false, refused: { reason: 'key_in_flight' } };
  }
  const actual = draft.entries.get(decidedOn.petId)?.version ?? 0;
  if (appends.length === 0 && actual !== decidedOn.version) {
    return { ok: false, error: new VersionConflict(decidedOn.petId, decidedOn.version, actual) };
  }
  return undefined;
}

/** Chains one append's events after the draft's head and applies them to its entry. */
function chainEvents(draft: PlanDraft, { meta, recordedAt }: Submission, append: Submission['appends'][number]): Appended {
  const { petId, events: decided } = append;
  let entry = draft.entries.get(petId);
  const recordedEvents: RecordedEvent[] = [];
  for (const event of decided) {
    draft.seq += 1n;
    const seq = draft.seq;
    const version = (entry?.version ?? 0) + 1;
    const fields = {
      prevHash: draft.prevHash,
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
    draft.events.push({ ...fields, hash });
    draft.prevHash = hash;
    const recorded: RecordedEvent = { ...event, ...meta, seq: Number(seq), petId, version, recordedAt };
    const adjustment =
      event.type === 'QuantitySet'
        ? adjustmentOf(entry, event, { seq, petId, actor: meta.actor, requestId: meta.requestId, recordedAt })
        : undefined;
    if (adjustment) draft.adjustments.push(adjustment);
    entry = applyEvent(entry, recorded);
    recordedEvents.push(recorded);
  }
  if (!entry) throw new Error(`append for pet ${petId} decided nothing`);
  return { entry, events: recordedEvents };
}

/** Each append checked against the entry as the submission's earlier appends left it; a
 * conflict anywhere puts the draft back as it was before the submission. */
function appendAll(draft: PlanDraft, submission: Submission, failedPets: Map<bigint, unknown>): SubmissionOutcome {
  const mark = { events: draft.events.length, adjustments: draft.adjustments.length, seq: draft.seq, prevHash: draft.prevHash };
  // The entries this submission touched, as they were before it.
  const touched = new Map<bigint, [Entry | undefined, Entry | undefined]>();
  const appended: Appended[] = [];
  for (const append of submission.appends) {
    const { petId, expectedVersion } = append;
    const version = draft.entries.get(petId)?.version ?? 0;
    if (version !== expectedVersion) {
      const error = new VersionConflict(petId, expectedVersion, version);
      draft.events.length = mark.events;
      draft.adjustments.length = mark.adjustments;
      ({ seq: draft.seq, prevHash: draft.prevHash } = mark);
      for (const [pet, [before, changedBefore]] of touched) {
        if (before) draft.entries.set(pet, before);
        else draft.entries.delete(pet);
        if (changedBefore) draft.changed.set(pet, changedBefore);
        else draft.changed.delete(pet);
      }
      for (const a of submission.appends) failedPets.set(a.petId, error);
      return { ok: false, error };
    }
    const done = chainEvents(draft, submission, append);
    if (!touched.has(petId)) touched.set(petId, [draft.entries.get(petId), draft.changed.get(petId)]);
    draft.entries.set(petId, done.entry);
    draft.changed.set(petId, done.entry);
    appended.push(done);
  }
  return { ok: true, value: appended };
}

/** Keeps the submission's record, and lists its receipt to sign when the store signs. */
function keepRecordAndReceipt(draft: PlanDraft, idempotency: Submission['idempotency'], appended: Appended[], signs: boolean): void {
  const last = appended.at(-1);
  const signed = last !== undefined && signs;
  if (idempotency) {
    // Its own object: the receipt is put in it once signed, before it is written, and a
    // later submission of the batch with its key replays it from the map.
    const record = signed && idempotency.record.status === 200 ? { ...idempotency.record } : idempotency.record;
    draft.records.set(scopeId(record), record);
    draft.stored.push(record);
    if (signed)
      draft.receipts.push({ seq: draft.seq, hash: draft.prevHash, appended: last, ...(record !== idempotency.record ? { record } : {}) });
  } else if (signed) draft.receipts.push({ seq: draft.seq, hash: draft.prevHash, appended: last });
}

/** Plans one submission as it is against the draft, moving the draft by what it writes. */
function planAsGiven(draft: PlanDraft, submission: Submission, context: DecisionContext, fresh: boolean): SubmissionOutcome {
  const refused = refusal(draft, submission, context, fresh);
  if (refused) return refused;
  const appended = appendAll(draft, submission, context.failedPets);
  if (!appended.ok) return appended;
  keepRecordAndReceipt(draft, submission.idempotency, appended.value, context.signs);
  return appended;
}

/**
 * Decides one submission against the draft, moving the draft by what it writes. One that
 * is stale (decided against an entry another writer has moved since, or against the
 * result of an earlier submission that failed) is decided again by the caller, when it
 * gave a way to, against the entries as the draft holds them now; that decision is
 * planned once, as it is (it cannot be stale), and its refusal is the outcome.
 */
export function decideSubmission(draft: PlanDraft, submission: Submission, context: DecisionContext): SubmissionOutcome {
  const planned = planAsGiven(draft, submission, context, false);
  if (planned.ok || !('error' in planned) || !(planned.error instanceof VersionConflict) || !context.decideAgain) return planned;
  const again = context.decideAgain((petId) => draft.entries.get(petId));
  if ('refused' in again) return { ok: false, refused: { reason: 'decided_again' } };
  return planAsGiven(draft, again, context, true);
}
