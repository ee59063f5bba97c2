// The projection's one rule: applyEvent turns an event into the entry's next row. The
// live write path (every adapter's append) and the replay (rebuild-projection) both use
// it, so they cannot drift apart. Only the adapter's projection table writes the rows.
import { evolve } from '../domain/evolve.ts';
import type { AppliedEvent } from '../domain/events.ts';
import type { Entry } from './port.ts';

export type { Entry } from './port.ts';

export function applyEvent(entry: Entry | undefined, event: AppliedEvent): Entry {
  const state = evolve(entry, event);
  if (state.version !== event.version) {
    throw new Error(`event ${event.seq} has version ${event.version}, the entry expects ${state.version}`);
  }
  return { petId: event.petId, quantity: state.quantity, status: state.status, version: state.version, updatedAt: event.recordedAt };
}
