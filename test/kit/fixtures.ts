// What tests put into a store before the behaviour under test: a key, tracked pets, and
// the events as a test reads them back, all through the storage port, so they work on
// every target.
import { appliedEntries, commandsFor, type CommandHandler } from '../../src/application/write/commands.ts';
import type { Command } from '../../src/domain/decide.ts';
import type { PetStatus } from '../../src/domain/events.ts';
import type { InventoryStore } from '../../src/store/port.ts';
import type { Entry } from '../../src/store/projection.ts';
import type { StoreTarget } from './stores.ts';

/** A command handler over store (the operator commands' way: one command at a time). */
export function commandsOn(store: InventoryStore, now: () => number = Date.now): CommandHandler {
  return commandsFor(store, now);
}

/** A new active key; returns the key itself. */
export function createKey(store: InventoryStore, name = 'tester', createdBy = 'test'): Promise<string> {
  return store.keys.create(name, createdBy);
}

export interface PetSeed {
  petId: bigint | number;
  quantity?: number;
  status?: PetStatus;
}

/** Tracks the pets in one all-or-nothing batch, as an operator's file of pets would. */
export async function trackPets(store: InventoryStore, pets: readonly PetSeed[], actor = 'cli:test', now?: () => number): Promise<void> {
  const commands: Command[] = pets.map((p) => ({
    type: 'TrackPet',
    petId: BigInt(p.petId),
    quantity: p.quantity ?? 0,
    status: p.status ?? 'available',
  }));
  // In batches of at most SEED_BATCH: one batch of tens of thousands keeps a PostgreSQL
  // transaction open while it is planned, longer than the service's sessions may idle in
  // one when the machine is busy (the server then closes the connection).
  const handler = commandsOn(store, now);
  for (let i = 0; i < commands.length; i += SEED_BATCH) {
    await handler.handleAll(commands.slice(i, i + SEED_BATCH), { actor, requestId: 'seed' }).then(appliedEntries);
  }
}

const SEED_BATCH = 5_000;

/** Runs each command on its own, in order (each its own event and transaction). */
export async function runCommands(
  store: InventoryStore,
  commands: readonly Command[],
  actor = 'cli:seed',
  now?: () => number,
): Promise<void> {
  const handler = commandsOn(store, now);
  for (const c of commands) await handler.handle(c, { actor, requestId: 'seed' });
}

/** One event as tests read it back through the port (integers as BigInt). */
export interface EventRow {
  seq: bigint;
  petId: bigint;
  version: bigint;
  type: string;
  data: string;
  actor: string;
  requestId: string;
  recordedAt: string;
  hash: string | null;
}

/** Every event of the log, by seq. */
export async function eventsOf(store: InventoryStore): Promise<EventRow[]> {
  const rows: EventRow[] = [];
  for await (const page of store.chainRows()) {
    for (const [seq, petId, version, type, data, actor, requestId, recordedAt, , hash] of page) {
      rows.push({ seq, petId, version, type, data, actor, requestId, recordedAt, hash });
    }
  }
  return rows;
}

/** One step of a seeded history: commands run together, at a time, by an actor. */
export interface Step {
  at: string;
  actor: string;
  requestId: string;
  commands: Command[];
}

/** Seeds a database through the port, each step at its own time and actor; closes it. */
export async function seedSteps({ target, db }: { target: StoreTarget; db: string }, steps: Step[]): Promise<void> {
  let clock = 0;
  const store = await target.open(db, { now: () => clock });
  try {
    const handler = commandsOn(store, () => clock);
    for (const step of steps) {
      clock = Date.parse(step.at);
      await handler.handleAll(step.commands, { actor: step.actor, requestId: step.requestId }).then(appliedEntries);
    }
  } finally {
    await store.close();
  }
}

/** The whole projection by petId, from one snapshot. */
export function entriesOf(store: Pick<InventoryStore, 'snapshot'>): Promise<Entry[]> {
  return store.snapshot((view) => view.entries());
}

/** The newest event's seq, 0 for an empty log. */
export function lastSeqOf(store: Pick<InventoryStore, 'snapshot'>): Promise<number> {
  return store.snapshot((view) => Promise.resolve(view.lastSeq));
}
