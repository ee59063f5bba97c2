// The projection's one rule: an event turns an entry into its next row. The command
// handler (deciding a batch's commands in turn), the live write path (the batch planner)
// and the replays (rebuild-projection, stock-at, a copy's import) all use it, so they
// cannot drift apart.
import { evolve } from './evolve.ts';
import type { EntryState, StreamEvent } from './events.ts';

/** One inventory entry: a row of the projection. */
export interface Entry extends EntryState {
  petId: bigint;
  updatedAt: string;
}

export function applyEvent(entry: Entry | undefined, event: StreamEvent): Entry {
  const state = evolve(entry, event);
  if (state.version !== event.version) {
    const which = event.seq === undefined ? `a decided ${event.type}` : `event ${event.seq}`;
    throw new Error(`${which} has version ${event.version}, the entry expects ${state.version}`);
  }
  return { petId: event.petId, quantity: state.quantity, status: state.status, version: state.version, updatedAt: event.recordedAt };
}
