// The stock_adjustments table's rows: one per QuantitySet event, with the quantity before
// it. The write path (the batch planner) and a copy's import make them with this one
// function, from the entry as it stood before the event, so that they cannot drift apart.
import type { Entry } from '../domain/apply-event.ts';
import type { DomainEvent } from '../domain/events.ts';

/** A stock_adjustments row as it is written (delta is computed by the table). */
export interface AdjustmentWrite {
  seq: bigint;
  petId: bigint;
  previousQuantity: number;
  quantity: number;
  actor: string;
  requestId: string;
  recordedAt: string;
}

/** Where an event stands in the log and who made it. */
export interface EventPlace {
  seq: bigint;
  petId: bigint;
  actor: string;
  requestId: string;
  recordedAt: string;
}

/** The adjustment row an event makes given its entry before it, or undefined when it makes none (not a QuantitySet). */
export function adjustmentOf(before: Pick<Entry, 'quantity'> | undefined, event: DomainEvent, at: EventPlace): AdjustmentWrite | undefined {
  if (event.type !== 'QuantitySet') return undefined;
  if (!before) throw new Error(`QuantitySet at seq ${at.seq} for pet ${at.petId}, which was never tracked`);
  return { ...at, previousQuantity: before.quantity, quantity: event.data.quantity };
}
