// Carries out domain commands: the store loads the entry, decide (pure) picks the
// events, and the store appends them and updates the projection in one transaction.
import { decide, type Command } from './domain/decide.ts';
import type { EventMeta } from './domain/events.ts';
import type Database from 'better-sqlite3';
import { makeEventStore, type EventStore } from './store/event-store.ts';
import { makeProjection, type Entry } from './store/projection.ts';

export interface CommandHandler {
  handle(command: Command, meta: EventMeta): Promise<Entry>;
  /** All commands or none: the first refusal leaves nothing behind. */
  handleAll(commands: Command[], meta: EventMeta): Promise<Entry[]>;
}

export function makeCommandHandler(store: EventStore): CommandHandler {
  const request = (command: Command) => ({
    petId: command.petId,
    decide: (state: Parameters<typeof decide>[1]) => decide(command, state),
  });
  return {
    handle: async (command, meta) => (await store.append(request(command), meta)).entry,
    handleAll: async (commands, meta) =>
      (await store.appendAll(commands.map(request), meta)).map((appended) => appended.entry),
  };
}

/** A command handler over db's own event store and projection, as the operator commands use. */
export function commandsFor(db: Database.Database, now: () => number = Date.now): CommandHandler {
  return makeCommandHandler(makeEventStore(db, { projection: makeProjection(db), now }));
}
