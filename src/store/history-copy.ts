// The copy role of the storage port: what copy-store reads from one store and writes
// into another, verbatim.
import type { ChainRow } from './event-log.ts';
import type { IdempotencyRecord } from './idempotency.ts';
import type { KeyChainRow, KeyRecord } from './keys.ts';

/** What copy-store moves into an empty store, and what it found there. */
export interface HistoryImport {
  /** Events in seq order, with their chain columns as they are (verbatim). */
  events: AsyncIterable<ChainRow[]>;
  keys: KeyRecord[];
  /** The stored answers of Idempotency-Keys still unexpired, so that retries of PATCHes
   * answered before the move are replayed after it. */
  idempotency?: AsyncIterable<IdempotencyRecord[]>;
  /** The key log, verbatim. */
  keyEvents: KeyChainRow[];
  /** The source's logId: a copy is the same log, and its signed heads and receipts stay valid. */
  logId?: string;
}

/** The target of a copy was not empty: nothing was written. */
export class StoreNotEmpty extends Error {
  override name = 'StoreNotEmpty';

  /** Throws unless none of these is present (truthy). */
  static unless(present: Record<'events' | 'keys' | 'entries' | 'records', unknown>): void {
    const found = (['events', 'keys', 'entries', 'records'] as const)
      .filter((what) => Boolean(present[what]))
      .map((what) => ({ events: 'events', keys: 'API keys', entries: 'inventory rows', records: 'idempotency records' })[what]);
    if (found.length > 0) throw new StoreNotEmpty(`the target is not empty (it has ${found.join(', ')}): nothing was copied`);
  }
}

export interface HistoryCopy {
  /** Every key with its hash, for copying a store; never shown to anyone. */
  keyRecords(): Promise<KeyRecord[]>;
  /**
   * Into an EMPTY store, in one transaction: the events verbatim (seq, times, actors,
   * hashes), the keys, the idempotency records, the chain head after the last event, and
   * the projection replayed from them. Rejects with StoreNotEmpty (naming what is there)
   * and writes nothing when the store holds any event, key, idempotency record or
   * projection row. Optional: an adapter that cannot
   * be a copy's target leaves it out.
   */
  importHistory(history: HistoryImport): Promise<{ events: number; keys: number; entries: number; idempotency: number }>;
}
