// The log's tiles as the service serves them (C2SP tlog-tiles, support/tiles.ts): a hash
// tile is one range read of a level of the stored tree, a bundle one page of the log by
// seq. Neither depends on the log's size: a tile the log does not hold yet is undefined.
import type { AuditReads } from '../store/audit-reads.ts';
import type { ChainRow, EventLog } from '../store/event-log.ts';
import { TILE_HEIGHT, TILE_WIDTH } from '../support/tiles.ts';

export interface TileReads {
  /** The hashes of the tile of width at level and index, concatenated. */
  hashTile(level: number, index: number, width: number): Promise<Buffer | undefined>;
  /** The width events of the bundle at index, with their chain columns. */
  bundle(index: number, width: number): Promise<ChainRow[] | undefined>;
}

/** The first leaf (or hash) of the tile, or undefined when it is past any log (2^53). */
function firstOf(index: number): number | undefined {
  const first = index * TILE_WIDTH;
  return Number.isSafeInteger(first) ? first : undefined;
}

export function makeTileReads(store: Pick<AuditReads, 'treeRow'> & Pick<EventLog, 'eventsAfter'>): TileReads {
  return {
    async hashTile(level, index, width) {
      const first = firstOf(index);
      if (first === undefined || level * TILE_HEIGHT > 53) return undefined;
      const hashes = await store.treeRow(level * TILE_HEIGHT, first, width);
      return hashes.length === width ? Buffer.concat(hashes) : undefined;
    },
    async bundle(index, width) {
      const first = firstOf(index);
      if (first === undefined) return undefined;
      const rows = await store.eventsAfter(BigInt(first), width);
      return rows.length === width ? rows : undefined;
    },
  };
}
