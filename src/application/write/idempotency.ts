// Requests sent with an Idempotency-Key, as a service in front of the command handler:
// find the key's stored answer (replayed, or refused as another request's), claim the
// key in this instance, handle the command, whose batch stores its answer with its
// events, and free the key. The edge says what a request is (its key, its fingerprint)
// and how an answer looks; this says what becomes of it.
import type { Command } from '../../domain/decide.ts';
import type { EventMeta } from '../../domain/events.ts';
import { IdempotencyKeyInFlight, scopeId, type IdempotencyScope, type IdempotencyStore } from '../../store/idempotency.ts';
import type { CommandHandler } from './commands.ts';
import { IdempotencyKeyReused, replayOf, type CommandResult, type Idempotent } from './command-result.ts';
import { byDeadline } from './deadline.ts';

export { IdempotencyKeyInFlight };
export type { StoredAnswer } from '../../store/idempotency.ts';

export interface IdempotentCommands {
  /** As CommandHandler.handle with a key; throws IdempotencyKeyReused for a key used for
   * another request, IdempotencyKeyInFlight for one being processed now. */
  handle(command: Command, meta: EventMeta, request: Idempotent, deadline: number): Promise<CommandResult>;
}

export interface IdempotencyDeps {
  commands: CommandHandler;
  records: Pick<IdempotencyStore, 'find'>;
  now: () => number;
  /** A stored answer was given again; a key was refused as reused or in flight. */
  onReplay?: () => void;
  onRefused?: (why: 'reused' | 'in_flight') => void;
}

export function idempotentCommands({ commands, records, now, onReplay, onRefused }: IdempotencyDeps): IdempotentCommands {
  const inFlight = keysInFlight();
  const handle = async (command: Command, meta: EventMeta, request: Idempotent, deadline: number): Promise<CommandResult> => {
    // A stored answer is replayed before the entry is looked at; a key another
    // instance's batch holds is in flight there.
    const stored = await byDeadline(records.find(request.scope, new Date(now()).toISOString()), deadline);
    if (stored) return replayOf(stored, request.fingerprint);
    const release = inFlight.claim(request.scope);
    if (!release) throw new IdempotencyKeyInFlight();
    try {
      return await commands.handle(command, meta, request, deadline);
    } finally {
      release();
    }
  };
  return {
    handle: async (command, meta, request, deadline) => {
      try {
        const result = await handle(command, meta, request, deadline);
        if (result.kind === 'replayed') onReplay?.();
        return result;
      } catch (error) {
        if (error instanceof IdempotencyKeyReused) onRefused?.('reused');
        else if (error instanceof IdempotencyKeyInFlight) onRefused?.('in_flight');
        throw error;
      }
    },
  };
}

/** The keys this instance is processing: a second request with one of them is 409. */
function keysInFlight(): { claim(scope: IdempotencyScope): (() => void) | undefined } {
  const claimed = new Set<string>();
  return {
    claim(scope) {
      const id = scopeId(scope);
      if (claimed.has(id)) return undefined;
      claimed.add(id);
      return () => claimed.delete(id);
    },
  };
}
