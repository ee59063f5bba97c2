// Carries out domain commands, on the road the style guide draws: read the entries
// (through the storage port), decide (pure), append the events and apply them to the
// projection in one transaction (one port call), answer.
//
// Commands are group-committed (group-commit.ts): those of one event-loop turn are
// decided together and appended as one batch. A later command on the same pet in a
// batch is decided against the earlier one's result. The store checks each append's
// expected version inside its transaction; when another writer (another process) came
// first, the command is loaded and decided again, a bounded number of times. However
// many batches a command goes through, it waits for the write lock at most 5 s in all.
import { REQUEST_BUDGET_MS } from './deadline.ts';
import { decide, type Command } from './domain/decide.ts';
import type { EventMeta } from './domain/events.ts';
import { evolve } from './domain/evolve.ts';
import { CommitFailed, groupCommit, type GroupCommitHooks } from './group-commit.ts';
import { IdempotencyKeyTaken, type IdempotencyRecord, type IdempotencyScope, type StoredAnswer } from './store/idempotency.ts';
import { CommitUnconfirmed, VersionConflict, type EventLog, type Outcome, type StreamAppend, type Submission } from './store/event-log.ts';
import { DeadlinePassed } from './store/health.ts';
import type { Entry, Projection } from './store/projection.ts';

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
  store: Pick<EventLog, 'appendBatch' | 'commitOutcome'> & Pick<Projection, 'loadEntries'>;
  now: () => number;
  /** How often a command is decided in all when other writers keep coming first. */
  maxAttempts?: number;
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
}

// Each conflict means another writer committed on the pet (progress, not a stall); with
// two processes batching 20 writers each onto 20 pets, 5 attempts were seen to run out
// on a loaded machine. The 5 s deadline still bounds the whole.
const DEFAULT_ATTEMPTS = 20;
/** The longest a command waits for the database's write lock, in all its batches. */
export const LOCK_WAIT_MS = REQUEST_BUDGET_MS;
/** What handleAll adds to LOCK_WAIT_MS per command: an operator's file of 40,000 pets is
 * one batch whose statements take seconds, which a request's 5 s would cut short. */
const PER_COMMAND_MS = 1;

export function makeCommandHandler({
  store,
  now,
  onCommit,
  onAppended,
  onCommitOutcome,
  maxAttempts = DEFAULT_ATTEMPTS,
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

  const commitJobs = async (jobs: Job[]): Promise<Outcome<Entry[]>[]> => {
    const at = now();
    const recordedAt = new Date(at).toISOString();
    const expiresAt = new Date(at + idempotencyTtlMs).toISOString();
    // The record of a job's answer, decided on its first pet's entry as it was.
    const recordOf = (job: Job, result: { entry: Entry } | { error: unknown }, decidedVersion: number) => {
      const answer = job.idempotent?.answer(result);
      if (!job.idempotent || !answer) return undefined;
      const { scope, path, fingerprint } = job.idempotent;
      return {
        record: { ...scope, path, ...answer, fingerprint, createdAt: recordedAt, expiresAt },
        decidedOn: { petId: job.commands[0]!.petId, version: decidedVersion },
      };
    };
    // Refusals whose answer is stored: the submission records it and appends nothing.
    const refusals = new Map<number, unknown>();
    const petIds = [...new Set(jobs.flatMap((job) => job.commands.map((c) => c.petId)))];
    // The entries as this batch's earlier submissions will leave them.
    const readBy = Math.min(...jobs.map((job) => job.deadline));
    const current = new Map<bigint, Entry | undefined>(await store.loadEntries(petIds, { waitUntil: readBy }));
    const outcomes: Outcome<Entry[]>[] = new Array<Outcome<Entry[]>>(jobs.length);
    const submissions: Submission[] = [];
    const positions: number[] = [];
    jobs.forEach((job, i) => {
      const decidedVersion = current.get(job.commands[0]!.petId)?.version ?? 0;
      try {
        const changed = new Map<bigint, Entry>();
        const appends: StreamAppend[] = job.commands.map((command) => {
          const entry = changed.has(command.petId) ? changed.get(command.petId) : current.get(command.petId);
          const events = decide(command, entry);
          let state = entry;
          for (const event of events) {
            const next = evolve(state, event);
            state = { ...next, petId: command.petId, updatedAt: recordedAt };
          }
          if (state) changed.set(command.petId, state);
          return { petId: command.petId, expectedVersion: entry?.version ?? 0, events };
        });
        for (const [petId, entry] of changed) current.set(petId, entry);
        const result = changed.get(job.commands[0]!.petId);
        const idempotency = result && recordOf(job, { entry: result }, decidedVersion);
        submissions.push({ meta: job.meta, recordedAt, appends, ...(idempotency ? { idempotency } : {}) });
        positions.push(i);
      } catch (error) {
        const idempotency = recordOf(job, { error }, decidedVersion);
        if (idempotency) {
          submissions.push({ meta: job.meta, recordedAt, appends: [], idempotency });
          positions.push(i);
          refusals.set(i, error);
        } else outcomes[i] = { ok: false, error };
      }
    });
    if (submissions.length > 0) {
      // Real time, not the injected clock: this bounds how long a client waits.
      const waitUntil = Math.min(...positions.map((i) => jobs[i]!.deadline));
      const started = performance.now();
      const appended = await store.appendBatch(submissions, {
        waitUntil,
        onCommitting: () => jobs.forEach((job) => (job.progress.committing = true)),
      });
      onAppended?.(
        submissions.length,
        (performance.now() - started) / 1000,
        appended.flatMap((outcome) => (outcome.ok ? outcome.value.flatMap((a) => a.events.map((e) => e.type)) : [])),
      );
      appended.forEach((outcome, k) => {
        const i = positions[k]!;
        // A refusal whose answer was stored is still a refusal.
        if (outcome.ok && refusals.has(i)) outcomes[i] = { ok: false, error: refusals.get(i) };
        else
          outcomes[i] = outcome.ok
            ? { ok: true, value: outcome.value.map((a): Written => (a.receipt ? { ...a.entry, receipt: a.receipt } : a.entry)) }
            : outcome;
      });
    }
    return outcomes;
  };
  const submit = groupCommit(commitBatch, { onCommit });

  /** Logs, once the database can tell, what became of a batch whose clients could not be told. */
  const findOutcome = (settled: Promise<unknown>, requestIds: string[]) => {
    const report = (outcome: CommitOutcomeReport['outcome']) => onCommitOutcome?.({ requestIds, outcome });
    const lookUp = (unconfirmed: CommitUnconfirmed, since: number) => {
      store.commitOutcome(unconfirmed.batch).then(report, () => {
        if (Date.now() - since > OUTCOME_GIVE_UP_MS) return report('unknown');
        setTimeout(() => lookUp(unconfirmed, since), OUTCOME_RETRY_MS).unref();
      });
    };
    settled.then(
      () => report('committed'),
      (error: unknown) => (error instanceof CommitUnconfirmed ? lookUp(error, Date.now()) : report('not committed')),
    );
  };

  /** The job's result, or by its deadline (and a grace for a stuck batch) what may be said instead. */
  const answered = (settled: Promise<Entry[]>, job: Job): Promise<Entry[]> => {
    let told = false;
    const unconfirmed = () => {
      if (told) return;
      told = true;
      findOutcome(settled, [job.meta.requestId]);
    };
    const result = settled.catch((error: unknown) => {
      if (error instanceof CommitUnconfirmed) unconfirmed();
      throw error;
    });
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => {
          const { progress } = job;
          if (!progress.committing) {
            // Not sent: dropped from the queue. Sent: the store sends no COMMIT after
            // the batch's deadline, which is this job's or earlier.
            if (!progress.sent) progress.abandoned = true;
            return reject(new DeadlinePassed());
          }
          unconfirmed();
          reject(new CommitUnconfirmed({}));
        },
        Math.max(0, job.deadline - Date.now() + ANSWER_GRACE_MS),
      );
    });
    return Promise.race([result, late]).finally(() => clearTimeout(timer));
  };

  const run = async (commands: Command[], meta: EventMeta, idempotent?: Idempotent, given?: number): Promise<Entry[]> => {
    const deadline = given ?? Date.now() + LOCK_WAIT_MS;
    for (let attempt = 1; ; attempt++) {
      // A request that spent its time before it got here (a slow authentication) is not
      // carried out after it was answered.
      if (Date.now() >= deadline) throw attempt === 1 ? new DeadlinePassed() : new CommitFailed(new DeadlinePassed());
      try {
        const job: Job = {
          commands,
          meta,
          deadline,
          progress: { sent: false, committing: false, abandoned: false },
          ...(idempotent ? { idempotent } : {}),
        };
        const settled = submit(job);
        // An answer given before the batch settled leaves its result to nobody.
        settled.catch(() => undefined);
        const answer = answered(settled, job);
        answer.catch(() => undefined);
        return await answer;
      } catch (error) {
        if (error instanceof IdempotencyKeyTaken) {
          if (error.record.fingerprint === idempotent?.fingerprint) throw new IdempotentReplay(error.record);
          throw new IdempotencyKeyReused('the idempotency key was used for another request');
        }
        if (!(error instanceof VersionConflict)) throw error;
        // Others kept writing this entry: "not now", like a lock held too long.
        if (attempt >= maxAttempts || Date.now() >= deadline) throw new CommitFailed(error);
      }
    }
  };
  return {
    handleAll: (commands, meta) => run(commands, meta, undefined, Date.now() + LOCK_WAIT_MS + commands.length * PER_COMMAND_MS),
    handle: async (command, meta, idempotent, deadline) => (await run([command], meta, idempotent, deadline))[0]!,
  };
}

/** A command handler over a store, as the operator commands use it. */
export function commandsFor(store: CommandDeps['store'], now: () => number = Date.now): CommandHandler {
  return makeCommandHandler({ store, now });
}
