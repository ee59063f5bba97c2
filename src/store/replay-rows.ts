// Decodes the event rows a replay reads into the events applyEvent takes.
import { decodeEvent } from '../domain/codec.ts';
import type { LoggedEvent } from '../domain/events.ts';
import type { ReplayRow } from './event-log.ts';

export function toLoggedEvent([seq, petId, version, type, data, recordedAt]: ReplayRow): LoggedEvent {
  const event = decodeEvent(type, data);
  // Built field by field, not spread: one object shape for every event type keeps a
  // replay of millions of events fast.
  return { type: event.type, data: event.data, seq: Number(seq), petId, version: Number(version), recordedAt } as LoggedEvent;
}
