// The log's tiles as the service serves them (C2SP tlog-tiles, support/tiles.ts): a hash
// tile is one range read of a level of the stored tree, a bundle one page of the log by
// seq. Neither depends on the log's size: a tile the log does not hold yet is undefined.
import type { AuditReads } from '../../store/audit-reads.ts';
import type { ChainRow, EventLog } from '../../store/event-log.ts';
import { eventJson } from '../../feed/event-json.ts';
import { entryBundle, TILE_HEIGHT, TILE_WIDTH } from '../../support/tiles.ts';

export interface TileReads {
  /** The hashes of the tile of width at level and index, concatenated. */
  hashTile(level: number, index: number, width: number): Promise<Buffer | undefined>;
  /** The entry bundle at index of width: each event's hash behind its length. */
  entries(index: number, width: number): Promise<Buffer | undefined>;
  /** The same events as JSON Lines, each line the object a feed page gives. */
  events(index: number, width: number): Promise<Buffer | undefined>;
}

/** The first leaf (or hash) of the tile, or undefined when it is past any log (2^53). */
function firstOf(index: number): number | undefined {
  const first = index * TILE_WIDTH;
  return Number.isSafeInteger(first) ? first : undefined;
}

/** The leaf data of an event: its hash, which every event in the tree has. */
function leafOf(row: ChainRow): string {
  if (row[9] === null) throw new Error(`event ${row[0]} has no hash: it cannot be a leaf`);
  return row[9];
}

export function makeTileReads(store: Pick<AuditReads, 'treeRow'> & Pick<EventLog, 'eventsAfter'>): TileReads {
  /** The width events of the bundle at index, with their chain columns. */
  const bundle = async (index: number, width: number) => {
    const first = firstOf(index);
    if (first === undefined) return undefined;
    const rows = await store.eventsAfter(BigInt(first), width);
    return rows.length === width ? rows : undefined;
  };
  return {
    async hashTile(level, index, width) {
      const first = firstOf(index);
      if (first === undefined || level * TILE_HEIGHT > 53) return undefined;
      const hashes = await store.treeRow(level * TILE_HEIGHT, first, width);
      return hashes.length === width ? Buffer.concat(hashes) : undefined;
    },
    entries: async (index, width) => {
      const rows = await bundle(index, width);
      return rows && entryBundle(rows.map(leafOf));
    },
    events: async (index, width) => {
      const rows = await bundle(index, width);
      return rows && Buffer.from(rows.map((r) => `${eventJson(r)}\n`).join(''));
    },
  };
}
