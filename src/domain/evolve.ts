// How one event changes an entry's state. Pure, and the only such rule: the live write
// path and the replay (rebuild-projection) both fold events through it.
import type { DomainEvent, EntryState } from './events.ts';

export function evolve(state: EntryState | undefined, event: DomainEvent): EntryState {
  switch (event.type) {
    case 'PetTracked':
      return { quantity: event.data.quantity, status: event.data.status, version: 1 };
    case 'QuantitySet': {
      const { status, version } = requireState(state, event);
      return { quantity: event.data.quantity, status, version: version + 1 };
    }
    case 'StatusSet': {
      const { quantity, version } = requireState(state, event);
      return { quantity, status: event.data.status, version: version + 1 };
    }
    default: {
      const unknown: never = event;
      throw new Error(`unknown event ${JSON.stringify(unknown)}`);
    }
  }
}

function requireState(state: EntryState | undefined, event: DomainEvent): EntryState {
  if (!state) throw new Error(`${event.type} for an entry that was never tracked`);
  return state;
}
