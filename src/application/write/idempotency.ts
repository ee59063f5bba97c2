// Requests sent with an Idempotency-Key, as a service in front of the command handler:
// find the key's stored answer (replayed, or refused as another request's, or as in flight
// where another instance holds the key), claim the key in this instance, handle the command, whose batch stores its answer with its
// events, and free the key. The edge says what a request is (its key, its fingerprint)
// and how an answer looks; this says what becomes of it.
import type { Command } from '../../domain/decide.ts';
import type { EventMeta } from '../../domain/events.ts';
import { KEY_IN_FLIGHT, scopeId, type IdempotencyScope, type IdempotencyStore } from '../../store/idempotency.ts';
import type { CommandHandler } from './commands.ts';
import { replayOf, type CommandResult, type Idempotent, type Refused } from './command-result.ts';
import { byDeadline } from './deadline.ts';

export type { StoredAnswer } from '../../store/idempotency.ts';

export interface IdempotentCommands {
  /** As CommandHandler.handle with a key; refused as idempotency_key_reused for a key used
   * for another request, as idempotency_key_in_flight for one being processed now. */
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

const IN_FLIGHT: Refused = { kind: 'refused', refusal: { reason: 'idempotency_key_in_flight' } };

export function idempotentCommands({ commands, records, now, onReplay, onRefused }: IdempotencyDeps): IdempotentCommands {
  const inFlight = keysInFlight();
  const handle = async (command: Command, meta: EventMeta, request: Idempotent, deadline: number): Promise<CommandResult> => {
    // A stored answer is replayed before the entry is looked at; a key another
    // instance's batch holds is in flight there.
    const stored = await byDeadline(records.find(request.scope, new Date(now()).toISOString()), deadline);
    if (stored === KEY_IN_FLIGHT) return IN_FLIGHT;
    if (stored) return replayOf(stored, request.fingerprint);
    const release = inFlight.claim(request.scope);
    if (!release) return IN_FLIGHT;
    try {
      return await commands.handle(command, meta, request, deadline);
    } finally {
      release();
    }
  };
  return {
    handle: async (command, meta, request, deadline) => {
      const result = await handle(command, meta, request, deadline);
      if (result.kind === 'replayed') onReplay?.();
      else if (result.kind === 'refused' && result.refusal.reason === 'idempotency_key_reused') onRefused?.('reused');
      else if (result.kind === 'refused' && result.refusal.reason === 'idempotency_key_in_flight') onRefused?.('in_flight');
      return result;
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
