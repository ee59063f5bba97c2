// Decodes the event rows a replay reads into the events applyEvent takes.
import { decodeEvent } from '../domain/codec.ts';
import type { AppliedEvent } from '../domain/events.ts';
import type { ReplayRow } from './event-log.ts';

export function toAppliedEvent([seq, petId, version, type, data, recordedAt]: ReplayRow): AppliedEvent {
  const event = decodeEvent(type, data);
  // Built field by field, not spread: one object shape for every event type keeps a
  // replay of millions of events fast.
  return { type: event.type, data: event.data, seq: Number(seq), petId, version: Number(version), recordedAt } as AppliedEvent;
}

/** The events of pages of rows, in order. */
export async function* appliedEvents(pages: AsyncIterable<ReplayRow[]>): AsyncIterable<AppliedEvent[]> {
  for await (const rows of pages) yield rows.map(toAppliedEvent);
}
