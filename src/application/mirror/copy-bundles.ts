// A copy's bundles for a signed tree whose hash tiles it holds already: each events
// bundle's hashes are recomputed from the events' fields, linked, and must be the leaves
// of the level-0 tile; its entry bundle must hold exactly those hashes. Full bundles kept
// by an earlier run are not fetched again.
import { readFile } from 'node:fs/promises';
import { GENESIS_HASH } from '../../store/hash-chain.ts';
import type { ChainRow } from '../../store/event-log.ts';
import { eventLeaf } from '../../support/merkle.ts';
import { entryBundle, tilePath, TILE_WIDTH, type Tile } from '../../support/tiles.ts';
import { fileOf } from './copy-hash-tiles.ts';
import type { CopyDir } from './copy-dir.ts';
import { bundleRows } from './event-lines.ts';
import { hashesOf } from './tree-tiles.ts';

interface BundleCopy {
  size: number;
  dir: CopyDir;
  fetchTile: (tile: Tile) => Promise<Buffer>;
  /** Told how many events are in the copy so far. */
  onProgress?: (events: number) => void;
}

/** The bundles of a tree of size events, by index. */
function bundlesOf(size: number): { index: number; width: number }[] {
  return Array.from({ length: Math.ceil(size / TILE_WIDTH) }, (_, index) => ({
    index,
    width: Math.min(TILE_WIDTH, size - index * TILE_WIDTH),
  }));
}

/** The hash of the last event of a kept entry bundle. */
const lastHash = (entries: Buffer) => entries.subarray(entries.length - 32).toString('hex');

/** Why a fetched bundle is not the tree's, or its rows. */
function checkedRows(index: number, width: number, events: string, entries: Buffer, leaves: Buffer[], prev: string): ChainRow[] | string {
  const where = tilePath({ kind: 'events', index, width });
  const rows = bundleRows(events, index * TILE_WIDTH + 1, prev);
  if (typeof rows === 'string') return `${where}: ${rows}`;
  if (rows.length !== width) return `${where} holds ${rows.length} events, not ${width}`;
  const wrong = rows.findIndex((row, i) => !eventLeaf(row[9]!).equals(leaves[i]!));
  if (wrong >= 0) return `${where}: the event with seq ${rows[wrong]![0]} is not the tree's leaf`;
  if (!entryBundle(rows.map((r) => r[9]!)).equals(entries))
    return `${tilePath({ kind: 'entries', index, width })} does not hold the events' hashes`;
  return rows;
}

/** Writes the tree's entry and events bundles into the copy; why they are not the tree's, or undefined. */
export async function copyBundles({ size, dir, fetchTile, onProgress = () => {} }: BundleCopy): Promise<string | undefined> {
  let prev = GENESIS_HASH;
  for (const { index, width } of bundlesOf(size)) {
    const [events, entries] = (['events', 'entries'] as const).map((kind) => ({ kind, index, width }));
    const kept = width === TILE_WIDTH ? dir.read(fileOf(entries!)) : undefined;
    if (kept && dir.has(fileOf(events!))) {
      prev = lastHash(kept);
      continue;
    }
    const leaves = dir.read(fileOf({ kind: 0, index, width }));
    if (!leaves) return `${tilePath({ kind: 0, index, width })}: the copy lacks the tile its bundle is checked against`;
    const [eventBytes, entryBytes] = [await fetchTile(events!), await fetchTile(entries!)];
    const rows = checkedRows(index, width, eventBytes.toString('utf8'), entryBytes, hashesOf(leaves), prev);
    if (typeof rows === 'string') return rows;
    dir.write(fileOf(events!), eventBytes);
    dir.write(fileOf(entries!), entryBytes);
    prev = lastHash(entryBytes);
    onProgress(index * TILE_WIDTH + width);
  }
  return undefined;
}

/** The copy's events after the first `after`, as its events bundles hold them, in pages of
 * a bundle (the first page from the event after `after` to its bundle's end). */
export async function* keptRows(size: number, dir: CopyDir, after = 0): AsyncIterable<ChainRow[]> {
  const first = Math.floor(after / TILE_WIDTH);
  // The hash each bundle's first event links to: the last of the bundle before it, full and kept.
  const before = first === 0 ? undefined : dir.read(fileOf({ kind: 'entries', index: first - 1, width: TILE_WIDTH }));
  if (first > 0 && before === undefined)
    throw new Error(`the copy lacks ${tilePath({ kind: 'entries', index: first - 1, width: TILE_WIDTH })}`);
  let prev = before === undefined ? GENESIS_HASH : lastHash(before);
  const from = BigInt(after);
  for (const { index, width } of bundlesOf(size).slice(first)) {
    const text = await readFile(dir.path(fileOf({ kind: 'events', index, width })), 'utf8');
    const rows = bundleRows(text, index * TILE_WIDTH + 1, prev);
    if (typeof rows === 'string') throw new Error(`the copy's ${tilePath({ kind: 'events', index, width })}: ${rows}`);
    prev = rows.at(-1)![9]!;
    yield rows.filter((row) => row[0] > from);
  }
}
