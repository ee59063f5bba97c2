// The decision of a batch: its jobs decided in order, each against the entries as the
// earlier ones leave them (pure, but for the read of the entries), and what that asks the
// store to append. A refusal is an outcome of its own, or, with a key, an answer to store.
// The plan also tells the store how to decide a job again, by the same decide, should
// the entries it was decided against be stale once the store holds the lock (another
// instance committed in between): in the batch's own transaction, which nobody else can
// overtake.
import { applyEvent, type Entry } from '../../domain/apply-event.ts';
import { decide, type Command } from '../../domain/decide.ts';
import type { DecideAgain, Outcome, StreamAppend, Submission } from '../../store/event-log.ts';
import type { StoredAnswer } from '../../store/idempotency.ts';
import type { Job, JobResult } from './command-job.ts';
import { isStoredRefusal, type Idempotent, type Refused } from './command-result.ts';
import type { EntriesRead, KnownEntries } from './known-entries.ts';

type Decision = { entry: Entry } | { error: unknown };

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
  /** By job: the refusals without a stored answer; the others are filled in once appended. */
  outcomes: Outcome<JobResult>[];
  /** By job: the refusals whose answer a submission stores. */
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
      // The store plans what this returns in the submission's place: the job is answered
      // by this decision, not the first.
      if (again.refusal) plan.refusals.set(i, again.refusal);
      else plan.refusals.delete(i);
      return 'submission' in again ? again.submission : { refusal: again.error };
    },
  };
  jobs.forEach((job, i) => {
    const made = submissionOf(job, decided.results[i]!, times);
    if (!('submission' in made)) {
      plan.outcomes[i] = { ok: false, error: made.error };
      return;
    }
    if (made.refusal) plan.refusals.set(i, made.refusal);
    plan.submissions.push(made.submission);
    plan.positions.push(i);
  });
  return plan;
}

/** What a job's decision asks of the store: a submission (with the refusal whose answer
 * it stores, if it is one), or nothing, when it is a refusal without an answer to store. */
function submissionOf(
  job: Job,
  { result, appends, decidedVersion }: Decided['results'][number],
  { recordedAt, expiresAt }: BatchTimes,
): { submission: Submission; refusal?: Refused } | { error: unknown; refusal?: undefined } {
  // The record of the job's answer, decided on its first pet's entry as it was.
  const answer = answerOf(job.idempotent, result);
  if ('error' in result && !answer) return { error: result.error };
  const submission: Submission = { meta: job.meta, recordedAt, appends };
  if (!answer) return { submission };
  const { scope, path, fingerprint } = job.idempotent!;
  submission.idempotency = {
    record: { ...scope, path, ...answer, fingerprint, createdAt: recordedAt, expiresAt },
    decidedOn: { petId: job.commands[0]!.petId, version: decidedVersion },
  };
  if ('error' in result && isStoredRefusal(result.error))
    return { submission, refusal: { kind: 'refused', refusal: result.error, answer } };
  return { submission };
}

/** The answer to store with a job's key; undefined: none (the key stays free). */
function answerOf(idempotent: Idempotent | undefined, result: Decision): StoredAnswer | undefined {
  if (!idempotent) return undefined;
  if ('entry' in result) return idempotent.answers.applied(result.entry);
  return isStoredRefusal(result.error) ? idempotent.answers.refused(result.error) : undefined;
}

/** Decides the jobs in order, each against the entries as the earlier ones leave them. */
function decideJobs(jobs: Job[], { current, known }: EntriesRead, recordedAt: string): Decided {
  const results: Decided['results'] = [];
  let refusedOnKnown = false;
  for (const job of jobs) {
    const first = job.commands[0]!;
    const decidedVersion = current.get(first.petId)?.version ?? 0;
    try {
      const appends = job.commands.length === 1 ? [decideOne(first, current, recordedAt)] : decideAll(job.commands, current, recordedAt);
      results.push({ result: { entry: current.get(first.petId)! }, appends, decidedVersion });
    } catch (error) {
      refusedOnKnown ||= known;
      results.push({ result: { error }, appends: [], decidedVersion });
    }
  }
  return { results, refusedOnKnown };
}

/** Decides one command against the entries, and leaves its result in them. */
function decideOne(command: Command, entries: Map<bigint, Entry | undefined>, recordedAt: string): StreamAppend {
  const entry = entries.get(command.petId);
  const events = decide(command, entry);
  let next = entry;
  for (const event of events) next = applyEvent(next, { ...event, petId: command.petId, version: (next?.version ?? 0) + 1, recordedAt });
  if (next) entries.set(command.petId, next);
  return { petId: command.petId, expectedVersion: entry?.version ?? 0, events };
}

/** Decides commands all or none: the entries change only if none is refused. */
function decideAll(commands: Command[], entries: Map<bigint, Entry | undefined>, recordedAt: string): StreamAppend[] {
  const changed = new Map<bigint, Entry | undefined>();
  const view = {
    get: (petId: bigint) => (changed.has(petId) ? changed.get(petId) : entries.get(petId)),
    set: (petId: bigint, entry: Entry) => changed.set(petId, entry),
  };
  const appends = commands.map((command) => decideOne(command, view as Map<bigint, Entry | undefined>, recordedAt));
  for (const [petId, entry] of changed) entries.set(petId, entry);
  return appends;
}
