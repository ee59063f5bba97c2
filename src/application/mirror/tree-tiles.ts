// The tree as its tiles give it, checked without trusting them: the root of a tree of
// any size is a fold of hashes from the partial tiles at its right edge (one per level),
// and a full tile's hashes fold to the one hash the level above holds for it. So the edge
// tiles are checked against a signed checkpoint's root, then every full tile against its
// parent, top down, as Go's TileHashReader does.
import { MissingNode, nodeHash, treeRoot, type NodeLookup } from '../../support/merkle.ts';
import { leavesPerHash, TILE_HEIGHT, TILE_WIDTH, type Tile } from '../../support/tiles.ts';

/** How many hashes level `level` of the tree of size leaves holds (its complete 256^level-leaf subtrees). */
export function hashesAt(size: number, level: number): number {
  return Math.floor(size / leavesPerHash(level));
}

/** The partial tiles at the tree's right edge, top level first: one per level whose hashes do not fill whole tiles. */
export function edgeTiles(size: number): Tile[] {
  const tiles: Tile[] = [];
  for (let level = 0; hashesAt(size, level) > 0; level++) {
    const count = hashesAt(size, level);
    if (count % TILE_WIDTH > 0) tiles.push({ kind: level, index: Math.floor(count / TILE_WIDTH), width: count % TILE_WIDTH });
  }
  return tiles.reverse();
}

/** A tile's bytes as its 32-byte hashes. */
export function hashesOf(bytes: Buffer): Buffer[] {
  return Array.from({ length: bytes.length / 32 }, (_, i) => bytes.subarray(i * 32, i * 32 + 32));
}

/** The root of a power-of-two run of hashes, folded pairwise. */
function fold(hashes: readonly Buffer[]): Buffer {
  let row = [...hashes];
  while (row.length > 1) row = Array.from({ length: row.length / 2 }, (_, i) => nodeHash(row[2 * i]!, row[2 * i + 1]!));
  return row[0]!;
}

/** The hash the level above holds for a full tile: its 256 hashes folded. */
export function tileRoot(bytes: Buffer): Buffer {
  return fold(hashesOf(bytes));
}

/** Finds the hashes of the tile of a level holding a hash index, when it is at hand. */
export type TileAt = (level: number, tileIndex: number) => Buffer[] | undefined;

/** Any node of the tree (tree level, index) folded from the one tile of level floor(level / 8) holding its hashes. */
export function nodeLookup(tileAt: TileAt): NodeLookup {
  return (level, index) => {
    const tileLevel = Math.floor(level / TILE_HEIGHT);
    const span = 2 ** (level - tileLevel * TILE_HEIGHT);
    const first = index * span;
    const tileIndex = Math.floor(first / TILE_WIDTH);
    const hashes = tileAt(tileLevel, tileIndex)?.slice(first - tileIndex * TILE_WIDTH, first - tileIndex * TILE_WIDTH + span);
    return hashes?.length === span ? fold(hashes) : undefined;
  };
}

/** The root of the tree of size leaves from its edge tiles (by level), or undefined when they lack a hash it needs. */
export function rootFromEdges(size: number, edges: ReadonlyMap<number, { index: number; hashes: Buffer[] }>): Buffer | undefined {
  const lookup = nodeLookup((level, index) => (edges.get(level)?.index === index ? edges.get(level)!.hashes : undefined));
  try {
    return treeRoot(size, lookup);
  } catch (error) {
    if (error instanceof MissingNode) return undefined;
    throw error;
  }
}
