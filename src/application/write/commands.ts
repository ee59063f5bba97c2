// Carries out domain commands, on the road the style guide draws: read the entries
// (through the storage port), decide (pure), append the events and apply them to the
// projection in one transaction (one port call), answer. This module wires the jobs that
// do it: the group commit (group-commit.ts) gathers the commands of one event-loop turn
// into one batch, decided and appended together (batch-commit.ts); the deadline watch
// answers every caller in time; the retry policy decides a command again when another
// writer (another process) came first. However many batches a command goes through, it
// waits for the write lock at most its deadline in all.
import type { Command } from '../../domain/decide.ts';
import type { EventMeta } from '../../domain/events.ts';
import { VersionConflict, type EventLog } from '../../store/event-log.ts';
import type { Projection } from '../../store/projection.ts';
import { makeBatchCommit } from './batch-commit.ts';
import { newJob } from './command-job.ts';
import type { CommandResult, Idempotent, Refused, Written } from './command-result.ts';
import { REQUEST_BUDGET_MS } from './deadline.ts';
import { deadlineWatch } from './deadline-watch.ts';
import { groupCommit, type GroupCommitHooks } from './group-commit.ts';
import { knownEntries } from './known-entries.ts';
import { DEFAULT_RETRY, retrying, type RetryPolicy } from './retry-policy.ts';
import { unconfirmedCommits, type CommitOutcomeReport } from './unconfirmed-commits.ts';

export type { CommitOutcomeReport };

/** How long an idempotency record is kept by default (IDEMPOTENCY_TTL_HOURS). */
const DEFAULT_IDEMPOTENCY_TTL_MS = 24 * 3600_000;

export interface CommandHandler {
  /**
   * The command's result: applied or refused; with idempotent, also replayed (the key's
   * answer was stored already), refused with its answer stored now, or refused as a key
   * used for another request. Throws only faults. Answers by `deadline` (Date.now(); 5 s
   * from now unless given) whatever the database does: DeadlinePassed when nothing was
   * written, CommitUnconfirmed when the commit was under way and its result is not known.
   */
  handle(command: Command, meta: EventMeta, idempotent?: Idempotent, deadline?: number): Promise<CommandResult>;
  /** All commands or none: the first refusal leaves nothing behind, and is the result.
   * Answers within 5 s plus 1 ms per command (a large file of pets is one batch of that size). */
  handleAll(commands: Command[], meta: EventMeta): Promise<AllResult>;
}

/** What handleAll comes to: every command applied, or the refusal of the first refused. */
export type AllResult = { kind: 'applied'; entries: Written[] } | Refused;

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

/** The longest a command waits for the database's write lock, in all its batches. */
const LOCK_WAIT_MS = REQUEST_BUDGET_MS;
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
  const entries = knownEntries(store);
  const submit = groupCommit(makeBatchCommit({ store, entries, now, idempotencyTtlMs, onAppended }), { onCommit });
  const watch = deadlineWatch(submit, unconfirmedCommits(store, onCommitOutcome));
  const run = (commands: Command[], meta: EventMeta, idempotent: Idempotent | undefined, deadline: number) =>
    retrying(
      retry,
      deadline,
      (error) => error instanceof VersionConflict,
      () => watch.attempt(newJob(commands, meta, deadline, idempotent)),
    );

  return {
    handleAll: async (commands, meta) => {
      const result = await run(commands, meta, undefined, Date.now() + LOCK_WAIT_MS + commands.length * PER_COMMAND_MS);
      // Without a key nothing is replayed: no answer is stored.
      if (result.kind === 'replayed') throw new Error('commands without an idempotency key were replayed');
      return result;
    },
    handle: async (command, meta, idempotent, deadline = Date.now() + LOCK_WAIT_MS) => {
      const result = await run([command], meta, idempotent, deadline);
      return result.kind === 'applied' ? { kind: 'applied', entry: result.entries[0]! } : result;
    },
  };
}

/** A command handler over a store, as the operator commands use it. */
export function commandsFor(store: CommandDeps['store'], now: () => number = Date.now): CommandHandler {
  return makeCommandHandler({ store, now });
}

/** The entry a command left, where anything but applied is a bug of the caller's. */
export function appliedEntry(result: CommandResult): Written {
  if (result.kind !== 'applied') throw new Error(`the command was ${result.kind}${refusalNote(result)}`);
  return result.entry;
}

/** The entries commands left, where a refusal is a bug of the caller's (seeding a store). */
export function appliedEntries(result: AllResult): Written[] {
  if (result.kind !== 'applied') throw new Error(`the commands were refused${refusalNote(result)}`);
  return result.entries;
}

const refusalNote = (result: CommandResult | AllResult) =>
  result.kind === 'refused' ? ` (${result.refusal.reason}${'petId' in result.refusal ? `, pet ${result.refusal.petId}` : ''})` : '';
