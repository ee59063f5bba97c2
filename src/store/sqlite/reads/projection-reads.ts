// The reads of the projection: entries by pet (point reads, the log deciding each entry's
// version), and the whole table (a scan, a page at a time, or one list).
// Its methods are async without awaiting: this adapter implements an asynchronous port over
// a synchronous driver, and `async` turns a throw into a rejection, as the port promises.
/* eslint-disable @typescript-eslint/require-await */
import type { Db } from '../database.ts';
import type { Entry, InventoryRow } from '../../projection.ts';
import { makeEntryReader } from './entries.ts';
import type { ProjectionTable } from '../projection.ts';
import type { Scans } from './scans.ts';

export interface ProjectionReader {
  loadEntries(petIds: readonly bigint[]): Map<bigint, Entry>;
  inventoryRows(): AsyncIterable<InventoryRow[]>;
  entries(): Promise<Entry[]>;
}

const toInventoryRow = ([petId, quantity, status, version]: InventoryRow): InventoryRow => [
  petId,
  Number(quantity),
  status,
  Number(version),
];

export function makeProjectionReader(
  pointDb: Db,
  pointProjection: ProjectionTable,
  scanDb: Db,
  scans: Scans,
  scanProjection: ProjectionTable,
): ProjectionReader {
  const currentEntry = makeEntryReader(pointDb, pointProjection);
  const inventory = scanDb.prepare('SELECT pet_id, quantity, status, version FROM inventory ORDER BY pet_id').safeIntegers(true).raw();
  return {
    loadEntries(petIds) {
      const found = new Map<bigint, Entry>();
      for (const petId of petIds) {
        const entry = currentEntry(petId);
        if (entry) found.set(petId, entry);
      }
      return found;
    },
    inventoryRows: () => scans.scan(() => inventory.iterate() as IterableIterator<InventoryRow>, toInventoryRow),
    entries: () => scans.exclusive(async () => scanProjection.list()),
  };
}
