// The stored form of an event's data: JSON with the payload's members at the top level
// and a schemaVersion, so that old events stay readable when a shape changes (decode
// is the place to upcast them).
import { isPetStatus, isQuantity, type DomainEvent, type EventType, type PetStatus } from './events.ts';

const EVENT_SCHEMA_VERSION = 1;

export function encodeData(event: DomainEvent): string {
  return JSON.stringify({ ...event.data, schemaVersion: EVENT_SCHEMA_VERSION });
}

// The exact text encodeData writes for a QuantitySet, by far the most common event.
const QUANTITY_SET_HEAD = '{"quantity":';
const QUANTITY_SET_TAIL = `,"schemaVersion":${EVENT_SCHEMA_VERSION}}`;

/** The quantity of data in encodeData's exact QuantitySet form, else undefined. */
function canonicalQuantity(data: string): number | undefined {
  if (!data.startsWith(QUANTITY_SET_HEAD) || !data.endsWith(QUANTITY_SET_TAIL)) return undefined;
  const digits = data.slice(QUANTITY_SET_HEAD.length, data.length - QUANTITY_SET_TAIL.length);
  if (digits.length === 0 || digits.length > 10 || (digits.length > 1 && digits[0] === '0')) return undefined;
  for (let i = 0; i < digits.length; i++) {
    const c = digits.charCodeAt(i);
    if (c < 48 || c > 57) return undefined;
  }
  const quantity = Number(digits);
  return isQuantity(quantity) ? quantity : undefined;
}

export function decodeEvent(type: string, data: string): DomainEvent {
  // A replay decodes millions of these: the canonical form is read without JSON.parse
  // (the same result; anything else takes the general path below).
  if (type === 'QuantitySet') {
    const quantity = canonicalQuantity(data);
    if (quantity !== undefined) return { type, data: { quantity } };
  }
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
