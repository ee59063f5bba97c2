// The business rules: given a command and the entry's current state, which events
// happen. Pure: no clock, no database; refusals are thrown.
import { PetAlreadyTracked, PetNotTracked, PreconditionFailed } from './errors.ts';
import type { DomainEvent, EntryState, PetStatus } from './events.ts';

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

export function decide(command: Command, state: EntryState | undefined): DomainEvent[] {
  switch (command.type) {
    case 'TrackPet':
      if (state) throw new PetAlreadyTracked(command.petId);
      return [{ type: 'PetTracked', data: { quantity: command.quantity, status: command.status } }];
    case 'SetQuantity': {
      if (!state) throw new PetNotTracked(command.petId);
      const failed = command.precondition?.(state.version);
      if (failed !== undefined) throw new PreconditionFailed(command.petId, state.version, failed);
      // Appended even when the quantity is unchanged: a confirmed count is a fact too.
      return [{ type: 'QuantitySet', data: { quantity: command.quantity } }];
    }
    case 'SetStatus':
      if (!state) throw new PetNotTracked(command.petId);
      return [{ type: 'StatusSet', data: { status: command.status } }];
    default: {
      const unknown: never = command;
      throw new Error(`unknown command ${JSON.stringify(unknown)}`);
    }
  }
}
