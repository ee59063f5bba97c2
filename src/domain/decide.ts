// The business rules: given a command and the entry's current state, which events
// happen, or why none may. Pure: no clock, no database; a refusal is returned, and only
// a fault (a command this code does not know) is thrown.
import type { DomainEvent, EntryState, PetStatus } from './events.ts';
import type { Refusal } from './refusals.ts';

export type Command =
  | { type: 'TrackPet'; petId: bigint; quantity: number; status: PetStatus }
  | {
      type: 'SetQuantity';
      petId: bigint;
      quantity: number;
      /** From If-Match / If-None-Match: the name of the condition the entry's current
       * version fails, or undefined when it may be written. */
      precondition?: (version: number) => string | undefined;
    }
  | { type: 'SetStatus'; petId: bigint; status: PetStatus };

/** What a command comes to against an entry: its events, or its refusal. */
export type Decision = { kind: 'decided'; events: DomainEvent[] } | { kind: 'refused'; refusal: Refusal };

const refused = (refusal: Refusal): Decision => ({ kind: 'refused', refusal });
const decided = (...events: DomainEvent[]): Decision => ({ kind: 'decided', events });

export function decide(command: Command, state: EntryState | undefined): Decision {
  const { petId } = command;
  switch (command.type) {
    case 'TrackPet':
      if (state) return refused({ reason: 'already_tracked', petId });
      return decided({ type: 'PetTracked', data: { quantity: command.quantity, status: command.status } });
    case 'SetQuantity': {
      if (!state) return refused({ reason: 'not_tracked', petId });
      const failed = command.precondition?.(state.version);
      if (failed !== undefined) return refused({ reason: 'precondition_failed', petId, currentVersion: state.version, failed });
      // Appended even when the quantity is unchanged: a confirmed count is a fact too.
      return decided({ type: 'QuantitySet', data: { quantity: command.quantity } });
    }
    case 'SetStatus':
      if (!state) return refused({ reason: 'not_tracked', petId });
      return decided({ type: 'StatusSet', data: { status: command.status } });
    default: {
      const unknown: never = command;
      throw new Error(`unknown command ${String((unknown as { type?: unknown }).type)}`);
    }
  }
}
