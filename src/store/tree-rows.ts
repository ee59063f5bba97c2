// A level's stored nodes as a range read gives them (a tile's hashes), on either database.

/** The hashes of rows (index, hash) read by index from from on, up to the first index
 * missing: a tile is served only from nodes without a gap. */
export function contiguous(rows: readonly (readonly [number | string, Buffer])[], from: number): Buffer[] {
  const hashes: Buffer[] = [];
  for (const [index, hash] of rows) {
    if (Number(index) !== from + hashes.length) break;
    hashes.push(hash);
  }
  return hashes;
}
