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
import { decide, type Command } from './domain/decide.ts';
import type { EventMeta } from './domain/events.ts';
import { evolve } from './domain/evolve.ts';
import { CommitFailed, groupCommit, type GroupCommitHooks } from './store/group-commit.ts';
import { VersionConflict, type Entry, type InventoryStore, type Outcome, type StreamAppend, type Submission } from './store/port.ts';

export interface CommandHandler {
  handle(command: Command, meta: EventMeta): Promise<Entry>;
  /** All commands or none: the first refusal leaves nothing behind. */
  handleAll(commands: Command[], meta: EventMeta): Promise<Entry[]>;
}

export interface CommandDeps extends GroupCommitHooks {
  store: InventoryStore;
  now: () => number;
  /** How often a command is decided in all when other writers keep coming first. */
  maxAttempts?: number;
  /** After a batch was appended: how many submissions, in how many seconds, and the
   * types of the events appended (the metrics count them). */
  onAppended?: (submissions: number, seconds: number, eventTypes: string[]) => void;
}

interface Job {
  commands: Command[];
  meta: EventMeta;
  /** Date.now() by which the command is answered, whatever the lock does. */
  deadline: number;
}

// Each conflict means another writer committed on the pet (progress, not a stall); with
// two processes batching 20 writers each onto 20 pets, 5 attempts were seen to run out
// on a loaded machine. The 5 s deadline still bounds the whole.
const DEFAULT_ATTEMPTS = 20;
/** The longest a command waits for the database's write lock, in all its batches. */
export const LOCK_WAIT_MS = 5_000;

export function makeCommandHandler({ store, now, onCommit, onAppended, maxAttempts = DEFAULT_ATTEMPTS }: CommandDeps): CommandHandler {
  const commitBatch = async (jobs: Job[]): Promise<Outcome<Entry[]>[]> => {
    const recordedAt = new Date(now()).toISOString();
    const petIds = [...new Set(jobs.flatMap((job) => job.commands.map((c) => c.petId)))];
    // The entries as this batch's earlier submissions will leave them.
    const current = new Map<bigint, Entry | undefined>(await store.loadEntries(petIds));
    const outcomes: Outcome<Entry[]>[] = new Array<Outcome<Entry[]>>(jobs.length);
    const submissions: Submission[] = [];
    const positions: number[] = [];
    jobs.forEach((job, i) => {
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
        submissions.push({ meta: job.meta, recordedAt, appends });
        positions.push(i);
      } catch (error) {
        outcomes[i] = { ok: false, error };
      }
    });
    if (submissions.length > 0) {
      // Real time, not the injected clock: this bounds how long a client waits.
      const waitUntil = Math.min(...positions.map((i) => jobs[i]!.deadline));
      const started = performance.now();
      const appended = await store.appendBatch(submissions, { waitUntil });
      onAppended?.(
        submissions.length,
        (performance.now() - started) / 1000,
        appended.flatMap((outcome) => (outcome.ok ? outcome.value.flatMap((a) => a.events.map((e) => e.type)) : [])),
      );
      appended.forEach((outcome, k) => {
        outcomes[positions[k]!] = outcome.ok ? { ok: true, value: outcome.value.map((a) => a.entry) } : outcome;
      });
    }
    return outcomes;
  };
  const submit = groupCommit(commitBatch, { onCommit });

  const handleAll = async (commands: Command[], meta: EventMeta): Promise<Entry[]> => {
    const deadline = Date.now() + LOCK_WAIT_MS;
    for (let attempt = 1; ; attempt++) {
      try {
        return await submit({ commands, meta, deadline });
      } catch (error) {
        if (!(error instanceof VersionConflict)) throw error;
        // Others kept writing this entry: "not now", like a lock held too long.
        if (attempt >= maxAttempts || Date.now() >= deadline) throw new CommitFailed(error);
      }
    }
  };
  return {
    handleAll,
    handle: async (command, meta) => (await handleAll([command], meta))[0]!,
  };
}

/** A command handler over a store, as the operator commands use it. */
export function commandsFor(store: InventoryStore, now: () => number = Date.now): CommandHandler {
  return makeCommandHandler({ store, now });
}
