// A copy's hash tiles for a signed tree: the partial tiles at the right edge are checked
// against the checkpoint's root, then every full tile not kept yet against the hash its
// parent holds for it, top down, so that each is known to be the signed tree's before it
// is written. A full tile kept by an earlier run is never fetched again.
import { tilePath, TILE_WIDTH, type Tile } from '../../support/tiles.ts';
import type { CopyDir } from './copy-dir.ts';
import { edgeTiles, hashesAt, hashesOf, rootFromEdges, tileRoot } from './tree-tiles.ts';

interface HashTileCopy {
  size: number;
  root: Buffer;
  dir: CopyDir;
  fetchTile: (tile: Tile) => Promise<Buffer>;
  /** Told of each tile fetched. */
  onFetched?: () => void;
}

export const fileOf = (tile: Tile) => `v1/log/${tilePath(tile)}`;

/** Writes the tree's hash tiles into the copy; why they are not the signed tree's, or undefined. */
export async function copyHashTiles({ size, root, dir, fetchTile, onFetched = () => {} }: HashTileCopy): Promise<string | undefined> {
  const fetch = async (tile: Tile) => {
    const bytes = await fetchTile(tile);
    onFetched();
    return bytes.length === tile.width * 32 ? bytes : `${tilePath(tile)} holds ${bytes.length} bytes, not ${tile.width * 32}`;
  };
  const edges = new Map<number, { index: number; hashes: Buffer[]; bytes: Buffer }>();
  for (const tile of edgeTiles(size)) {
    const bytes = await fetch(tile);
    if (typeof bytes === 'string') return bytes;
    edges.set(tile.kind as number, { index: tile.index, hashes: hashesOf(bytes), bytes });
  }
  if (!rootFromEdges(size, edges)?.equals(root)) {
    return `the tiles at the tree's edge (${edgeTiles(size).map(tilePath).join(', ')}) do not fold to the checkpoint's root`;
  }
  for (const tile of edgeTiles(size)) dir.write(fileOf(tile), edges.get(tile.kind as number)!.bytes);

  // The hashes of the tile at level, index that a full tile below is checked against.
  const parentOf = (level: number, index: number): Buffer[] | undefined => {
    const edge = edges.get(level);
    if (edge?.index === index) return edge.hashes;
    const kept = dir.read(fileOf({ kind: level, index, width: TILE_WIDTH }));
    return kept && hashesOf(kept);
  };
  for (let level = edgeTiles(size)[0]?.kind as number; level >= 0; level--) {
    let parent: { index: number; hashes: Buffer[] | undefined } | undefined;
    for (let index = 0; index < Math.floor(hashesAt(size, level) / TILE_WIDTH); index++) {
      const tile = { kind: level, index, width: TILE_WIDTH };
      if (dir.has(fileOf(tile))) continue;
      const bytes = await fetch(tile);
      if (typeof bytes === 'string') return bytes;
      const at = Math.floor(index / TILE_WIDTH);
      if (parent?.index !== at) parent = { index: at, hashes: parentOf(level + 1, at) };
      const expected = parent.hashes?.[index % TILE_WIDTH];
      if (!expected) return `${tilePath(tile)}: the copy has no tile above it to check it against`;
      if (!tileRoot(bytes).equals(expected)) return `${tilePath(tile)} is not the tree's: its hashes do not fold to the hash above it`;
      dir.write(fileOf(tile), bytes);
    }
  }
  return undefined;
}
