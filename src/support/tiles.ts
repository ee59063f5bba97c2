// The log's tree and entries as C2SP tlog-tiles cuts them: tiles of height 8, so that a
// tile holds up to 256 hashes. The hash tile at level L, index N holds the stored nodes of
// tree level 8L with indices N * 256 + [0, W): level 0 the leaf hashes, level L the roots
// of the full tiles of level L - 1. The entry bundle N holds leaves N * 256 + [0, W), that
// is the events with seq N * 256 + 1 to N * 256 + W. A tile of width 256 is full and never
// changes; a narrower one is partial (`.p/W`). Paths write N in 3-digit elements, all but
// the last prefixed with `x` (1234067 is x001/x234/067). Nothing here reads a database.

/** How many hashes (or entries) a full tile holds: 2^TILE_HEIGHT. */
export const TILE_WIDTH = 256;
export const TILE_HEIGHT = 8;
/** C2SP's highest level. */
const MAX_TILE_LEVEL = 63;

/** A hash tile (level 0 to 63), an entry bundle, or the same entries as the feed's JSON Lines. */
type TileKind = number | 'entries' | 'events';

export interface Tile {
  kind: TileKind;
  index: number;
  /** 1 to 256; 256 is a full tile. */
  width: number;
}

/** `<N>` as C2SP writes it: 3-digit elements, all but the last prefixed with `x`. */
function tileIndexPath(index: number): string {
  const digits = String(index).padStart(3, '0');
  const groups: string[] = [];
  for (let end = digits.length; end > 0; end -= 3) groups.unshift(digits.slice(Math.max(0, end - 3), end).padStart(3, '0'));
  return groups.map((g, i) => (i < groups.length - 1 ? `x${g}` : g)).join('/');
}

/** The tile's path under the log's prefix (`tile/0/x001/234.p/5`, `tile/entries/000`). */
export function tilePath({ kind, index, width }: Tile): string {
  return `tile/${kind}/${tileIndexPath(index)}${width < TILE_WIDTH ? `.p/${width}` : ''}`;
}

/**
 * `<N>[.p/<W>]` as the path gives it, or undefined when it is malformed: an element not of
 * three digits, a leading element of zeros, a width of 0, 256 or more, or with leading
 * zeros. An index too large to be a tile of any log (past 2^53) is Infinity.
 */
export function parseTileIndex(text: string): { index: number; width: number } | undefined {
  const m = /^((?:x[0-9]{3}\/)*[0-9]{3})(?:\.p\/([1-9][0-9]{0,2}))?$/.exec(text);
  if (!m) return undefined;
  const elements = m[1]!.split('/');
  if (elements.length > 1 && elements[0] === 'x000') return undefined;
  const width = m[2] === undefined ? TILE_WIDTH : Number(m[2]);
  if (m[2] !== undefined && width >= TILE_WIDTH) return undefined;
  const index = Number(elements.map((e) => e.replace('x', '')).join(''));
  return { index: Number.isSafeInteger(index) ? index : Infinity, width };
}

/** A level as a path gives it, or undefined when it is malformed (leading zeros, above 63). */
export function parseTileLevel(text: string): number | undefined {
  if (!/^(?:0|[1-9][0-9]?)$/.test(text)) return undefined;
  const level = Number(text);
  return level <= MAX_TILE_LEVEL ? level : undefined;
}

/** How many leaves one hash of a level-L tile covers: 256^L. */
export function leavesPerHash(level: number): number {
  return TILE_WIDTH ** level;
}

/**
 * The tiles a tree of size leaves is made of, as a reader of the whole tree fetches them:
 * per level the full tiles and, where the level's hashes do not fill one, the partial
 * tile of their width; then the entry bundles, cut the same way as level 0.
 */
export function tilesOf(size: number): Tile[] {
  const tiles: Tile[] = [];
  for (let level = 0; level <= MAX_TILE_LEVEL; level++) {
    const hashes = Math.floor(size / leavesPerHash(level));
    if (hashes === 0) break;
    tiles.push(...cut(level, hashes));
  }
  return tiles;
}

/** The tiles of one kind holding count hashes or entries from index 0. */
function cut(kind: TileKind, count: number): Tile[] {
  const tiles: Tile[] = [];
  for (let index = 0; index * TILE_WIDTH < count; index++) {
    tiles.push({ kind, index, width: Math.min(TILE_WIDTH, count - index * TILE_WIDTH) });
  }
  return tiles;
}

/** An entry bundle: each entry a big-endian uint16 length (32), then the leaf data, the
 * 32 raw bytes of the event's hash (lowercase hex here). */
export function entryBundle(eventHashes: readonly string[]): Buffer {
  const bundle = Buffer.alloc(eventHashes.length * 34);
  eventHashes.forEach((hash, i) => {
    bundle.writeUInt16BE(32, i * 34);
    bundle.write(hash, i * 34 + 2, 32, 'hex');
  });
  return bundle;
}
