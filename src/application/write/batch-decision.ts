// The decision of a batch: its jobs decided in order, each against the entries as the
// earlier ones leave them (pure, but for the read of the entries), and what that asks the
// store to append. A refusal is an outcome of its own, or, with a key, an answer to store.
// An exception while deciding a job is a fault (a bug), never a refusal: that job fails
// with it, and the others of the batch are decided as if it were not there.
// The plan also tells the store how to decide a job again, by the same decide, should
// the entries it was decided against be stale once the store holds the lock (another
// instance committed in between): in the batch's own transaction, which nobody else can
// overtake.
import { applyEvent, type Entry } from '../../domain/apply-event.ts';
import { decide, type Command } from '../../domain/decide.ts';
import type { Refusal } from '../../domain/refusals.ts';
import type { DecideAgain, DecidedAgain, Outcome, StreamAppend, Submission } from '../../store/event-log.ts';
import type { StoredAnswer } from '../../store/idempotency.ts';
import type { Job, JobResult } from './command-job.ts';
import { isStoredRefusal, type Idempotent, type Refused } from './command-result.ts';
import type { EntriesRead, KnownEntries } from './known-entries.ts';

/** What deciding a job came to: the entry it leaves, its refusal, or a fault. */
type Decision = { entry: Entry } | { refusal: Refusal } | { fault: unknown };

/** What a job's decision asks of the store: a submission (with the refusal whose answer it
 * stores, if it is one), a refusal with nothing to store, or nothing (a fault). */
type Made = { submission: Submission; refused?: Refused } | { refused: Refused } | { fault: unknown };

interface Decided {
  results: { result: Decision; appends: StreamAppend[]; decidedVersion: number }[];
  /** A job was refused while some entry came from memory. */
  refusedOnKnown: boolean;
}

/** What a batch sends to the store, and the outcomes known before it is sent. */
export interface BatchPlan {
  submissions: Submission[];
  /** The job of each submission, by its index in the batch. */
  positions: number[];
  /** By job: the refusals without a stored answer, and the faults; the others are filled
   * in once appended. */
  outcomes: Outcome<JobResult>[];
  /** By job: the refusals whose answer a submission stores, and those the store's
   * decideAgain came to (its outcome is then decided_again). */
  refusals: Map<number, Refused>;
  /** For the store (BatchOptions.decideAgain): submission k decided again; keeps refusals
   * up to date with the decision it returns. */
  decideAgain: DecideAgain;
  /** Set once the store decided a job again: another writer came in between, so the
   * entries this process remembers may be stale too. */
  overtaken: boolean;
}

/** When the batch is recorded, and until when its stored answers are kept. */
export interface BatchTimes {
  recordedAt: string;
  expiresAt: string;
}

/**
 * Decides the jobs against the entries this process's commits left, where the store says
 * no other writer came since; a refusal decided so is decided again on what the store
 * reads (a stale entry's append the store refuses itself, by its expected version).
 */
export async function decideBatch(jobs: Job[], entries: KnownEntries, times: BatchTimes, readBy: number): Promise<BatchPlan> {
  const known = entries.valid();
  let decided = decideJobs(jobs, await entries.read(jobs, known, readBy), times.recordedAt);
  if (known && decided.refusedOnKnown) decided = decideJobs(jobs, await entries.read(jobs, false, readBy), times.recordedAt);
  return planOf(jobs, decided, times);
}

function planOf(jobs: Job[], decided: Decided, times: BatchTimes): BatchPlan {
  const plan: BatchPlan = {
    submissions: [],
    positions: [],
    outcomes: new Array<Outcome<JobResult>>(jobs.length),
    refusals: new Map(),
    overtaken: false,
    decideAgain: (k, entry) => {
      plan.overtaken = true;
      const i = plan.positions[k]!;
      const job = jobs[i]!;
      const current = new Map<bigint, Entry | undefined>(job.commands.map(({ petId }) => [petId, entry(petId)]));
      const again = submissionOf(job, decideJobs([job], { current, known: false }, times.recordedAt).results[0]!, times);
      return decidedAgain(plan, i, again);
    },
  };
  jobs.forEach((job, i) => {
    const made = submissionOf(job, decided.results[i]!, times);
    if ('fault' in made) {
      plan.outcomes[i] = { ok: false, error: made.fault };
      return;
    }
    if (!('submission' in made)) {
      plan.outcomes[i] = { ok: true, value: made.refused };
      return;
    }
    if (made.refused) plan.refusals.set(i, made.refused);
    plan.submissions.push(made.submission);
    plan.positions.push(i);
  });
  return plan;
}

/** What the store's decideAgain returns for job i decided again (`again`): the store plans
 * it in the submission's place, so the job is answered by this decision, not the first.
 * A fault there is thrown: the store's batch fails whole, nothing of it written. */
function decidedAgain(plan: BatchPlan, i: number, again: Made): DecidedAgain {
  if ('fault' in again) throw again.fault;
  if (again.refused) plan.refusals.set(i, again.refused);
  else plan.refusals.delete(i);
  return 'submission' in again ? again.submission : { refused: true };
}

/** What a job's decision asks of the store. */
function submissionOf(
  job: Job,
  { result, appends, decidedVersion }: Decided['results'][number],
  { recordedAt, expiresAt }: BatchTimes,
): Made {
  if ('fault' in result) return { fault: result.fault };
  // The record of the job's answer, decided on its first pet's entry as it was.
  const answer = answerOf(job.idempotent, result);
  const refused: Refused | undefined =
    'refusal' in result ? { kind: 'refused', refusal: result.refusal, ...(answer && { answer }) } : undefined;
  if (refused && !answer) return { refused };
  const submission: Submission = { meta: job.meta, recordedAt, appends };
  if (answer) {
    const { scope, path, fingerprint } = job.idempotent!;
    submission.idempotency = {
      record: { ...scope, path, ...answer, fingerprint, createdAt: recordedAt, expiresAt },
      decidedOn: { petId: job.commands[0]!.petId, version: decidedVersion },
    };
  }
  return refused ? { submission, refused } : { submission };
}

/** The answer to store with a job's key; undefined: none (the key stays free). */
function answerOf(idempotent: Idempotent | undefined, result: { entry: Entry } | { refusal: Refusal }): StoredAnswer | undefined {
  if (!idempotent) return undefined;
  if ('entry' in result) return idempotent.answers.applied(result.entry);
  return isStoredRefusal(result.refusal) ? idempotent.answers.refused(result.refusal) : undefined;
}

/** Decides the jobs in order, each against the entries as the earlier ones leave them. */
function decideJobs(jobs: Job[], { current, known }: EntriesRead, recordedAt: string): Decided {
  const results: Decided['results'] = [];
  let refusedOnKnown = false;
  for (const job of jobs) {
    const first = job.commands[0]!;
    const decidedVersion = current.get(first.petId)?.version ?? 0;
    const { result, appends } = decideJob(job.commands, current, recordedAt);
    if ('refusal' in result) refusedOnKnown ||= known;
    results.push({ result, appends, decidedVersion });
  }
  return { results, refusedOnKnown };
}

/** Decides a job's commands, all or none; what they throw is the job's fault, and leaves
 * the entries as they were. */
function decideJob(
  commands: Command[],
  current: Map<bigint, Entry | undefined>,
  recordedAt: string,
): { result: Decision; appends: StreamAppend[] } {
  try {
    const decided = commands.length === 1 ? decideOne(commands[0]!, current, recordedAt) : decideAll(commands, current, recordedAt);
    if ('refusal' in decided) return { result: decided, appends: [] };
    return { result: { entry: current.get(commands[0]!.petId)! }, appends: Array.isArray(decided) ? decided : [decided] };
  } catch (fault) {
    return { result: { fault }, appends: [] };
  }
}

/** Decides one command against the entries, and leaves its result in them. */
function decideOne(command: Command, entries: Map<bigint, Entry | undefined>, recordedAt: string): StreamAppend | { refusal: Refusal } {
  const entry = entries.get(command.petId);
  const decision = decide(command, entry);
  if (decision.kind === 'refused') return { refusal: decision.refusal };
  let next = entry;
  for (const event of decision.events)
    next = applyEvent(next, { ...event, petId: command.petId, version: (next?.version ?? 0) + 1, recordedAt });
  if (next) entries.set(command.petId, next);
  return { petId: command.petId, expectedVersion: entry?.version ?? 0, events: decision.events };
}

/** Decides commands all or none: the entries change only if none is refused. */
function decideAll(
  commands: Command[],
  entries: Map<bigint, Entry | undefined>,
  recordedAt: string,
): StreamAppend[] | { refusal: Refusal } {
  const changed = new Map<bigint, Entry | undefined>();
  const view = {
    get: (petId: bigint) => (changed.has(petId) ? changed.get(petId) : entries.get(petId)),
    set: (petId: bigint, entry: Entry) => changed.set(petId, entry),
  };
  const appends: StreamAppend[] = [];
  for (const command of commands) {
    const decided = decideOne(command, view as Map<bigint, Entry | undefined>, recordedAt);
    if ('refusal' in decided) return decided;
    appends.push(decided);
  }
  for (const [petId, entry] of changed) entries.set(petId, entry);
  return appends;
}
