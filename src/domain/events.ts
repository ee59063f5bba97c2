// The domain's vocabulary: pet statuses, events (past tense, a discriminated union) and
// the state of one inventory entry. Pure data, no I/O.

export const PET_STATUSES = ['available', 'pending', 'sold'] as const;
export type PetStatus = (typeof PET_STATUSES)[number];

const MAX_QUANTITY = 2147483647;
export const MAX_PET_ID = 9223372036854775807n;

/** An event's payload as the domain decides it, before it is recorded. */
export type DomainEvent =
  | { type: 'PetTracked'; data: { quantity: number; status: PetStatus } }
  | { type: 'QuantitySet'; data: { quantity: number } }
  | { type: 'StatusSet'; data: { status: PetStatus } };

export type EventType = DomainEvent['type'];

/** Who caused an event and within which request: every event row carries both. */
export interface EventMeta {
  actor: string;
  requestId: string;
}

// One event at three stages, each the one before with more fields: placed in its pet's
// stream (what applying it to an entry needs), numbered by the log, and recorded with
// who made it.

/** An event placed in its pet's stream: what applying it needs. A decided event has no
 * seq yet (the log gives it one on append); one read from the log has. */
export type StreamEvent = DomainEvent & { petId: bigint; version: number; recordedAt: string; seq?: number };

/** A placed event the log has numbered: one read back from the log. */
export type LoggedEvent = StreamEvent & { seq: number };

/** A numbered event with who made it and in which request: a whole row of the log. */
export type RecordedEvent = LoggedEvent & EventMeta;

/** The state of one tracked pet, which the domain decides on. */
export interface EntryState {
  quantity: number;
  status: PetStatus;
  /** The number of events of this entry: the optimistic-concurrency version. */
  version: number;
}

export function isPetStatus(value: unknown): value is PetStatus {
  return typeof value === 'string' && (PET_STATUSES as readonly string[]).includes(value);
}

export function isQuantity(value: unknown): value is number {
  return Number.isInteger(value) && (value as number) >= 0 && (value as number) <= MAX_QUANTITY;
}

/**
 * Parses a pet id written as canonical decimal digits (no sign, no leading zero, no
 * exponent), 1 to int64 max. Returns undefined for anything else.
 */
export function parsePetId(text: string): bigint | undefined {
  if (!/^[1-9][0-9]{0,18}$/.test(text)) return undefined;
  const id = BigInt(text);
  return id <= MAX_PET_ID ? id : undefined;
}
