// The projection's role of the storage port: the entries (one row per tracked pet) that
// GET /v1/inventory lists and a PATCH is decided against, the signal that they changed,
// and their replacement by a rebuild. The rows are made by the domain's one rule
// (domain/apply-event.ts); only the adapter's projection module writes them.
import type { Entry } from '../domain/apply-event.ts';
import type { PetStatus } from '../domain/events.ts';

export type { Entry };

/** A projection row for GET /v1/inventory: [petId, quantity, status, version]. */
export type InventoryRow = [petId: bigint, quantity: number, status: PetStatus, version: number];

interface EntryReadOptions {
  /** Wall-clock time (Date.now) by which the read answers or fails. */
  waitUntil?: number;
}

export interface Projection {
  /** The current entries of these pets; a pet that is not tracked is absent. */
  loadEntries(petIds: readonly bigint[], options?: EntryReadOptions): Promise<Map<bigint, Entry>>;
  /** Changes whenever the projection may have changed, by this process or another. */
  changeToken(): Promise<string>;
  /** The same token when the store can tell it at once, without waiting (SQLite: a
   * statement; PostgreSQL: while its notifications prove current); else undefined. */
  changeTokenNow(): string | undefined;
  /** The projection by petId, a page at a time, from one snapshot. */
  inventoryRows(): AsyncIterable<InventoryRow[]>;
  /**
   * Holding the write lock: applies the events after seq `after` to entries (the replay
   * of a snapshot), then replaces the projection with them (a shadow table swapped in,
   * so readers see the old one until the commit), and puts right the stock_adjustments
   * rows that differ from what the events give. Returns the caught-up count, the
   * adjustments put right, the projection as it was, and the entries written.
   */
  replaceProjection(
    entries: Map<bigint, Entry>,
    after: number,
  ): Promise<{ caughtUp: number; adjustments: number; before: Entry[]; entries: Map<bigint, Entry> }>;
}
