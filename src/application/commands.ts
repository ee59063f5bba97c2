// Carries out domain commands, on the road the style guide draws: read the entries
// (through the storage port), decide (pure), append the events and apply them to the
// projection in one transaction (one port call), answer.
//
// Commands are group-committed (group-commit.ts): those of one event-loop turn are
// decided together and appended as one batch. A later command on the same pet in a
// batch is decided against the earlier one's result. The store checks each append's
// expected version inside its transaction; when another writer (another process) came
// first, the command is loaded and decided again, as the retry policy says (attempts and
// back-off, as data). However many batches a command goes through, it waits for the
// write lock at most its deadline in all.
import { REQUEST_BUDGET_MS } from './deadline.ts';
import { decide, type Command } from '../domain/decide.ts';
import type { EventMeta } from '../domain/events.ts';
import { applyEvent } from '../domain/apply-event.ts';
import { CommitFailed, groupCommit, type GroupCommitHooks } from './group-commit.ts';
import { IdempotencyKeyTaken, type IdempotencyRecord, type IdempotencyScope, type StoredAnswer } from '../store/idempotency.ts';
import { CommitUnconfirmed, VersionConflict, type EventLog, type Outcome, type StreamAppend, type Submission } from '../store/event-log.ts';
import { DeadlinePassed } from '../store/health.ts';
import type { Entry, Projection } from '../store/projection.ts';

/**
 * A command sent with an Idempotency-Key: its answer is stored with its event (or alone,
 * for the refusals `answer` maps), and a key used already is not carried out again.
 */
export interface Idempotent {
  scope: IdempotencyScope;
  /** The request's path, stored with its answer. */
  path: string;
  fingerprint: string;
  /** The answer to store for the command's result; undefined: none (the key stays free). */
  answer(result: { entry: Entry } | { error: unknown }): StoredAnswer | undefined;
}

/** The key's answer was stored already, for the same request: give it again. */
export class IdempotentReplay extends Error {
  constructor(readonly record: IdempotencyRecord) {
    super('the answer of this idempotency key is replayed');
    this.name = 'IdempotentReplay';
  }
}

/** The key's answer was stored for another request (another fingerprint). */
export class IdempotencyKeyReused extends Error {
  override name = 'IdempotencyKeyReused';
}

/** A refusal (404, 412) whose answer was stored with its key: it is answered as stored. */
export class RefusalStored extends Error {
  constructor(
    readonly refusal: unknown,
    readonly answer: StoredAnswer,
  ) {
    super('the refusal of this idempotency key was stored');
    this.name = 'RefusalStored';
  }
}

/** An entry as a command left it, with the Log-Receipt of its write when the store signs. */
export type Written = Entry & { receipt?: string };

/** How long an idempotency record is kept by default (IDEMPOTENCY_TTL_HOURS). */
export const DEFAULT_IDEMPOTENCY_TTL_MS = 24 * 3600_000;

export interface CommandHandler {
  /**
   * With idempotent: throws IdempotentReplay or IdempotencyKeyReused for a key used
   * already. Answers by `deadline` (Date.now(); 5 s from now unless given) whatever the
   * database does: DeadlinePassed when nothing was written, CommitUnconfirmed when the
   * commit was under way and its result is not known.
   */
  handle(command: Command, meta: EventMeta, idempotent?: Idempotent, deadline?: number): Promise<Written>;
  /** All commands or none: the first refusal leaves nothing behind. Answers within 5 s
   * plus 1 ms per command (a large file of pets is one batch of that size). */
  handleAll(commands: Command[], meta: EventMeta): Promise<Entry[]>;
}

/** What became of a batch whose requests were answered CommitUnconfirmed, once known. */
export interface CommitOutcomeReport {
  requestIds: string[];
  outcome: 'committed' | 'not committed' | 'unknown';
}

/** How long after its deadline a request whose batch has not settled is answered anyway:
 * the store ends its own waits at the deadline, so this is only for a batch stuck past
 * it (a server that stopped answering, a disk that stalls). */
export const ANSWER_GRACE_MS = 500;
/** How often the outcome of an unconfirmed commit is looked up while the database does not answer. */
const OUTCOME_RETRY_MS = 1_000;
/** For how long it is looked up before it is logged as unknown. */
const OUTCOME_GIVE_UP_MS = 10 * 60_000;

export interface CommandDeps extends GroupCommitHooks {
  /** The write path: the entries a command is decided against, the log it appends to. */
  store: Pick<EventLog, 'appendBatch' | 'commitOutcome'> & Pick<Projection, 'loadEntries'> & Partial<Pick<Projection, 'changeTokenNow'>>;
  now: () => number;
  /** How a command is decided again when other writers keep coming first. */
  retry?: RetryPolicy;
  /** How long the answer of a request with an Idempotency-Key is kept. */
  idempotencyTtlMs?: number;
  /** After a batch was appended: how many submissions, in how many seconds, and the
   * types of the events appended (the metrics count them). */
  onAppended?: (submissions: number, seconds: number, eventTypes: string[]) => void;
  /** Told what happened to a batch whose requests were answered CommitUnconfirmed. */
  onCommitOutcome?: (report: CommitOutcomeReport) => void;
}

/** Where a job is: a request answered before its batch settled is told what that allows. */
interface Progress {
  /** In a batch under way. */
  sent: boolean;
  /** The store can no longer promise that its batch will not commit. */
  committing: boolean;
  /** Answered already without being sent: it must never be. */
  abandoned: boolean;
}

interface Job {
  commands: Command[];
  meta: EventMeta;
  /** Only for a single command. */
  idempotent?: Idempotent;
  /** Date.now() by which the command is answered, whatever the lock does. */
  deadline: number;
  progress: Progress;
  /** Settles the caller's promise; undefined once it was settled. */
  resolve?: (entries: Entry[]) => void;
  reject?: (error: unknown) => void;
  /** Answered CommitUnconfirmed: its batch's outcome is to be logged once known. */
  unconfirmed?: boolean;
}

/**
 * How a command that met another writer's commit (a VersionConflict: progress, not a
 * stall) is tried again: at most `attempts` decisions in all, the n-th retry after
 * `minTimeoutMs * factor^(n-1)` (0: in the next batch). The deadline bounds the whole
 * whatever the policy says. (emmett's `retries: { retries, minTimeout, factor }`.)
 */
export interface RetryPolicy {
  attempts: number;
  minTimeoutMs: number;
  factor: number;
}

// Conflicts come from other processes writing the same pets; each is another writer's
// progress, so many attempts are allowed, the deadline bounding them
// (docs/performance.md has what was measured).
export const DEFAULT_RETRY: RetryPolicy = { attempts: 20, minTimeoutMs: 0, factor: 2 };
/** The longest a command waits for the database's write lock, in all its batches. */
export const LOCK_WAIT_MS = REQUEST_BUDGET_MS;
/** What handleAll adds to LOCK_WAIT_MS per command: an operator's file of many pets is
 * one batch whose statements take longer than a request's budget. */
const PER_COMMAND_MS = 1;

export function makeCommandHandler({
  store,
  now,
  onCommit,
  onAppended,
  onCommitOutcome,
  retry = DEFAULT_RETRY,
  idempotencyTtlMs = DEFAULT_IDEMPOTENCY_TTL_MS,
}: CommandDeps): CommandHandler {
  const commitBatch = async (batch: Job[]): Promise<Outcome<Entry[]>[]> => {
    // Jobs answered while they waited for this batch are left out: their clients were
    // told that nothing was written. (A job once sent is never abandoned.)
    const live = batch.filter((job) => !job.progress.abandoned);
    for (const job of live) job.progress.sent = true;
    const outcomes = live.length === 0 ? [] : await commitJobs(live);
    if (live.length === batch.length) return outcomes;
    let k = 0;
    return batch.map((job) => (job.progress.abandoned ? { ok: false, error: new DeadlinePassed() } : outcomes[k++]!));
  };

  const entries = knownEntries(store);
  /** The entries of the jobs' pets: those known, and the others read from the store. */
  const entriesOf = async (jobs: Job[], useKnown: boolean, readBy: number) => {
    const current = new Map<bigint, Entry | undefined>();
    const missing: bigint[] = [];
    for (const job of jobs) {
      for (const { petId } of job.commands) {
        if (current.has(petId)) continue;
        const entry = useKnown ? entries.get(petId) : undefined;
        current.set(petId, entry);
        if (entry === undefined) missing.push(petId);
      }
    }
    if (missing.length > 0) for (const [petId, entry] of await store.loadEntries(missing, { waitUntil: readBy })) current.set(petId, entry);
    return { current, known: useKnown && missing.length < current.size };
  };

  const commitJobs = async (jobs: Job[]): Promise<Outcome<Entry[]>[]> => {
    const at = now();
    const recordedAt = new Date(at).toISOString();
    const expiresAt = new Date(at + idempotencyTtlMs).toISOString();
    const readBy = Math.min(...jobs.map((job) => job.deadline));
    // Decided against the entries this process's commits left, where the store says no
    // other writer came since; a refusal decided so is decided again on what the store
    // reads (a stale entry's append the store refuses itself, by its expected version).
    const known = entries.valid();
    let decided = decideJobs(jobs, await entriesOf(jobs, known, readBy), recordedAt);
    if (known && decided.refusedOnKnown) decided = decideJobs(jobs, await entriesOf(jobs, false, readBy), recordedAt);
    // Refusals whose answer is stored: the submission records it and appends nothing.
    const refusals = new Map<number, RefusalStored>();
    const outcomes: Outcome<Entry[]>[] = new Array<Outcome<Entry[]>>(jobs.length);
    const submissions: Submission[] = [];
    const positions: number[] = [];
    for (let i = 0; i < jobs.length; i++) {
      const job = jobs[i]!;
      const { result, appends, decidedVersion } = decided.results[i]!;
      // The record of the job's answer, decided on its first pet's entry as it was.
      const answer = job.idempotent?.answer(result);
      if ('error' in result && !answer) {
        outcomes[i] = { ok: false, error: result.error };
        continue;
      }
      const submission: Submission = { meta: job.meta, recordedAt, appends };
      if (answer) {
        const { scope, path, fingerprint } = job.idempotent!;
        submission.idempotency = {
          record: { ...scope, path, ...answer, fingerprint, createdAt: recordedAt, expiresAt },
          decidedOn: { petId: job.commands[0]!.petId, version: decidedVersion },
        };
        if ('error' in result) refusals.set(i, new RefusalStored(result.error, answer));
      }
      submissions.push(submission);
      positions.push(i);
    }
    if (submissions.length > 0) {
      // Real time, not the injected clock: this bounds how long a client waits.
      let waitUntil = Infinity;
      for (const i of positions) waitUntil = Math.min(waitUntil, jobs[i]!.deadline);
      const started = performance.now();
      const appended = await store.appendBatch(submissions, {
        waitUntil,
        onCommitting: () => {
          for (const job of jobs) job.progress.committing = true;
        },
      });
      const types: string[] = [];
      for (let k = 0; k < appended.length; k++) {
        const outcome = appended[k]!;
        const i = positions[k]!;
        if (!outcome.ok) {
          outcomes[i] = outcome;
          continue;
        }
        // A refusal whose answer was stored is still a refusal, answered as stored.
        const refusal = refusals.get(i);
        if (refusal) {
          outcomes[i] = { ok: false, error: refusal };
          continue;
        }
        const written: Written[] = [];
        for (const a of outcome.value) {
          for (const e of a.events) types.push(e.type);
          entries.remember(a.entry);
          written.push(a.receipt ? { ...a.entry, receipt: a.receipt } : a.entry);
        }
        outcomes[i] = { ok: true, value: written };
      }
      entries.committed(appended.some((outcome) => !outcome.ok));
      onAppended?.(submissions.length, (performance.now() - started) / 1000, types);
    }
    return outcomes;
  };
  const submit = groupCommit(commitBatch, { onCommit });

  /** Logs, once the database can tell, what became of a batch whose client was told it
   * could not be confirmed. */
  const report = (job: Job, outcome: CommitOutcomeReport['outcome']) => onCommitOutcome?.({ requestIds: [job.meta.requestId], outcome });
  const lookUp = (job: Job, unconfirmed: CommitUnconfirmed, since: number) => {
    store.commitOutcome(unconfirmed.batch).then(
      (outcome) => report(job, outcome),
      () => {
        if (Date.now() - since > OUTCOME_GIVE_UP_MS) return report(job, 'unknown');
        setTimeout(() => lookUp(job, unconfirmed, since), OUTCOME_RETRY_MS).unref();
      },
    );
  };

  // The jobs whose callers wait, and one timer for the earliest of their deadlines (and
  // the grace for a stuck batch): a job settled before it costs nothing of its own.
  const waiting = new Set<Job>();
  let timer: NodeJS.Timeout | undefined;
  let timerAt = Infinity;
  const arm = (at: number) => {
    if (timer) clearTimeout(timer);
    timerAt = at;
    timer = setTimeout(sweep, Math.max(0, at - Date.now()));
    // The callers' own connections keep the process alive while they wait.
    timer.unref();
  };
  const sweep = () => {
    timer = undefined;
    timerAt = Infinity;
    const at = Date.now();
    let next = Infinity;
    for (const job of waiting) {
      const due = job.deadline + ANSWER_GRACE_MS;
      if (due <= at) late(job);
      else if (due < next) next = due;
    }
    if (next < Infinity) arm(next);
  };
  const take = (job: Job) => {
    const { resolve, reject } = job;
    waiting.delete(job);
    job.resolve = undefined;
    job.reject = undefined;
    return { resolve, reject };
  };
  /** What may be said by the deadline of a job whose batch has not settled. */
  const late = (job: Job) => {
    const { reject } = take(job);
    const { progress } = job;
    if (!progress.committing) {
      // Not sent: dropped from the queue. Sent: the store sends no COMMIT after the
      // batch's deadline, which is this job's or earlier.
      if (!progress.sent) progress.abandoned = true;
      return reject?.(new DeadlinePassed());
    }
    job.unconfirmed = true;
    reject?.(new CommitUnconfirmed({}));
  };
  const settled = (job: Job, entries: Entry[]) => {
    if (job.resolve) take(job).resolve?.(entries);
    else if (job.unconfirmed) report(job, 'committed');
  };
  const failed = (job: Job, error: unknown) => {
    const answered = job.reject === undefined;
    if (error instanceof CommitUnconfirmed) {
      job.unconfirmed = true;
      lookUp(job, error, Date.now());
    } else if (answered && job.unconfirmed) report(job, 'not committed');
    if (!answered) take(job).reject?.(error);
  };
  const attempt = (job: Job) =>
    new Promise<Entry[]>((resolve, reject) => {
      job.resolve = resolve;
      job.reject = reject;
      waiting.add(job);
      if (job.deadline + ANSWER_GRACE_MS < timerAt) arm(job.deadline + ANSWER_GRACE_MS);
      submit(job).then(
        (entries) => settled(job, entries),
        (error: unknown) => failed(job, error),
      );
    });

  const run = async (commands: Command[], meta: EventMeta, idempotent?: Idempotent, given?: number): Promise<Entry[]> => {
    const deadline = given ?? Date.now() + LOCK_WAIT_MS;
    for (let n = 1; ; n++) {
      // A request that spent its time before it got here (a slow authentication) is not
      // carried out after it was answered.
      if (Date.now() >= deadline) throw n === 1 ? new DeadlinePassed() : new CommitFailed(new DeadlinePassed());
      try {
        const job: Job = { commands, meta, deadline, progress: { sent: false, committing: false, abandoned: false } };
        if (idempotent) job.idempotent = idempotent;
        return await attempt(job);
      } catch (error) {
        if (error instanceof IdempotencyKeyTaken) {
          if (error.record.fingerprint === idempotent?.fingerprint) throw new IdempotentReplay(error.record);
          throw new IdempotencyKeyReused('the idempotency key was used for another request');
        }
        if (!(error instanceof VersionConflict)) throw error;
        // Others kept writing this entry: "not now", like a lock held too long.
        if (n >= retry.attempts || Date.now() >= deadline) throw new CommitFailed(error);
        const pause = Math.min(retry.minTimeoutMs * retry.factor ** (n - 1), deadline - Date.now());
        if (pause > 0) await new Promise((resolve) => setTimeout(resolve, pause));
      }
    }
  };
  return {
    handleAll: (commands, meta) => run(commands, meta, undefined, Date.now() + LOCK_WAIT_MS + commands.length * PER_COMMAND_MS),
    handle: async (command, meta, idempotent, deadline) => (await run([command], meta, idempotent, deadline))[0]!,
  };
}

interface Decided {
  results: { result: { entry: Entry } | { error: unknown }; appends: StreamAppend[]; decidedVersion: number }[];
  /** A job was refused while some entry came from memory. */
  refusedOnKnown: boolean;
}

/** Decides the jobs in order, each against the entries as the earlier ones leave them. */
function decideJobs(
  jobs: Job[],
  { current, known }: { current: Map<bigint, Entry | undefined>; known: boolean },
  recordedAt: string,
): Decided {
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

/** The most entries kept in memory; past it they are forgotten and read again. */
const KNOWN_ENTRIES = 10_000;

/**
 * The entries this process's commits left, valid while the store's change token has not
 * moved since the last of them: then no other writer (another process, an operator
 * command, a rebuild) came in between, and the store's read would give the same. A
 * writer that slips in between a commit and the token read after it leaves an entry
 * that is stale, which decides an append the store refuses (its expected version), never
 * a wrong answer: refusals are decided again on a fresh read.
 */
function knownEntries(store: Partial<Pick<Projection, 'changeTokenNow'>>) {
  const known = new Map<bigint, Entry>();
  let token: string | undefined;
  const forget = () => {
    known.clear();
    token = undefined;
  };
  return {
    valid(): boolean {
      if (token === undefined) return false;
      if (store.changeTokenNow?.() === token) return true;
      forget();
      return false;
    },
    get: (petId: bigint) => known.get(petId),
    remember(entry: Entry) {
      if (known.size >= KNOWN_ENTRIES) known.clear();
      known.set(entry.petId, entry);
    },
    /** After a batch; failed: some submission failed (its pets are read again). */
    committed(failed: boolean) {
      if (failed || !store.changeTokenNow) return forget();
      // The batch committed: a store that cannot tell now must not fail its answers.
      try {
        token = store.changeTokenNow();
      } catch {
        forget();
      }
    },
  };
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

/** A command handler over a store, as the operator commands use it. */
export function commandsFor(store: CommandDeps['store'], now: () => number = Date.now): CommandHandler {
  return makeCommandHandler({ store, now });
}
