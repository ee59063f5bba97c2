// Reading one entry as it is now, for a client that asks for it (and its version).
import type { Entry } from '../../domain/apply-event.ts';
import type { Projection } from '../../store/projection.ts';

export interface EntryReads {
  /** The pet's entry by `waitUntil` (Date.now()), undefined when it is not tracked. */
  entry(petId: bigint, waitUntil: number): Promise<Entry | undefined>;
}

export function entryReads(store: Pick<Projection, 'loadEntries'>): EntryReads {
  return { entry: async (petId, waitUntil) => (await store.loadEntries([petId], { waitUntil })).get(petId) };
}
