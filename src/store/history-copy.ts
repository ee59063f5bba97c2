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

/** A history to append does not continue the store's chain: nothing was written. */
export class HistoryDiverged extends Error {
  override name = 'HistoryDiverged';
}

/** The pages as they come, once the first row is seen to continue the chain that ends
 * at head; else HistoryDiverged. */
export async function* continuing(pages: AsyncIterable<ChainRow[]>, head: { seq: bigint; hash: string }): AsyncIterable<ChainRow[]> {
  let first = true;
  for await (const page of pages) {
    if (first && page.length > 0) {
      const [seq, , , , , , , , prevHash] = page[0]!;
      if (seq !== head.seq + 1n || prevHash !== head.hash) {
        throw new HistoryDiverged(
          `the history starts at seq ${seq} after the hash ${prevHash}; the store ends at seq ${head.seq} with the hash ${head.hash}: nothing was appended`,
        );
      }
      first = false;
    }
    yield page;
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
  /**
   * The events that follow the store's last one, verbatim, in one transaction, with the
   * projection, the stock adjustments and the tree extended from them: how a kept copy
   * grows. Rejects with HistoryDiverged, and writes nothing, when the first does not
   * continue the store's chain. Keys and idempotency records are not part of it.
   */
  appendHistory(events: AsyncIterable<ChainRow[]>): Promise<{ events: number }>;
}
