// The stored form of an event's data: JSON with the payload's members at the top level
// and a schemaVersion, so that old events stay readable when a shape changes (decode
// is the place to upcast them).
import { isPetStatus, isQuantity, type DomainEvent, type EventType, type PetStatus } from './events.ts';

export const EVENT_SCHEMA_VERSION = 1;

export function encodeData(event: DomainEvent): string {
  return JSON.stringify({ ...event.data, schemaVersion: EVENT_SCHEMA_VERSION });
}

export function decodeEvent(type: string, data: string): DomainEvent {
  const raw = JSON.parse(data) as Record<string, unknown>;
  const version = raw.schemaVersion;
  if (version !== EVENT_SCHEMA_VERSION) {
    throw new Error(`${type} event has unknown schemaVersion ${String(version)}`);
  }
  const t = type as EventType;
  switch (t) {
    case 'PetTracked':
      return { type: t, data: { quantity: quantity(raw, t), status: status(raw, t) } };
    case 'QuantitySet':
      return { type: t, data: { quantity: quantity(raw, t) } };
    case 'StatusSet':
      return { type: t, data: { status: status(raw, t) } };
    default: {
      const unknown: never = t;
      throw new Error(`unknown event type ${String(unknown)}`);
    }
  }
}

function quantity(raw: Record<string, unknown>, type: string): number {
  if (!isQuantity(raw.quantity)) throw new Error(`${type} event has an invalid quantity`);
  return raw.quantity;
}

function status(raw: Record<string, unknown>, type: string): PetStatus {
  if (!isPetStatus(raw.status)) throw new Error(`${type} event has an invalid status`);
  return raw.status;
}
