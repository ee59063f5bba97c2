// The log's Merkle tree, as RFC 6962 (RFC 9162 section 2.1) defines it: leaf i is the
// event with seq i + 1, its data the 32 raw bytes of the event's hash; a leaf hashes as
// SHA-256(0x00 || data), a node as SHA-256(0x01 || left || right). The stores keep the
// hash of every complete subtree (a node): level L, index i covers the leaves
// [i * 2^L, (i + 1) * 2^L). Any root or proof is then a fold of O(log n) stored nodes,
// read by key: nothing here reads a database, and no proof needs the events.
// The proofs are in Go's tlog order (bottom up), which RFC 9162 also gives.
import { createHash, hash } from 'node:crypto';

/** A stored node: the complete subtree of 2^level leaves starting at leaf index * 2^level. */
export interface NodeKey {
  level: number;
  index: number;
}

export interface TreeNode extends NodeKey {
  hash: Buffer;
}

/** Finds a stored node's hash; throws (or returns undefined) for one the store lacks. */
export type NodeLookup = (level: number, index: number) => Buffer | undefined;

export const EMPTY_ROOT = createHash('sha256').digest();

/** The store lacks a node a root or a proof needs: its tree was cut or edited. */
export class MissingNode extends Error {
  override name = 'MissingNode';
  constructor(level: number, index: number) {
    super(`the tree has no node at level ${level}, index ${index}`);
  }
}

function leafHash(data: Buffer): Buffer {
  return hash('sha256', Buffer.concat([LEAF_PREFIX, data]), 'buffer');
}

export function nodeHash(left: Buffer, right: Buffer): Buffer {
  return hash('sha256', Buffer.concat([NODE_PREFIX, left, right]), 'buffer');
}

const LEAF_PREFIX = Buffer.from([0]);
const NODE_PREFIX = Buffer.from([1]);

/** The leaf hash of the event whose hash (lowercase hex) is eventHash. */
export function eventLeaf(eventHash: string): Buffer {
  return leafHash(Buffer.from(eventHash, 'hex'));
}

/** The largest power of two strictly below n (n >= 2). */
function splitPoint(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

/**
 * The stored nodes whose fold is the hash of the leaves [lo, hi): the range is cut into
 * complete subtrees, largest first, as the RFC's recursion cuts it. lo must be a
 * multiple of a power of two at least hi - lo (every range a proof asks for is).
 */
function rangeNodes(lo: number, hi: number): NodeKey[] {
  const keys: NodeKey[] = [];
  while (lo < hi) {
    let size = 1;
    let level = 0;
    while (size * 2 <= hi - lo) {
      size *= 2;
      level += 1;
    }
    keys.push({ level, index: lo / size });
    lo += size;
  }
  return keys;
}

/** The hash of the leaves [lo, hi) (the tree's root for [0, size)). */
function rangeHash(lo: number, hi: number, lookup: NodeLookup): Buffer {
  if (hi <= lo) {
    if (lo === 0 && hi === 0) return EMPTY_ROOT;
    throw new Error(`no subtree for leaves [${lo}, ${hi})`);
  }
  const hashes = rangeNodes(lo, hi).map(({ level, index }) => {
    const hash = lookup(level, index);
    if (!hash) throw new MissingNode(level, index);
    return hash;
  });
  let hash = hashes.pop()!;
  while (hashes.length > 0) hash = nodeHash(hashes.pop()!, hash);
  return hash;
}

/** The root of the tree of the first size leaves. */
export function treeRoot(size: number, lookup: NodeLookup): Buffer {
  return rangeHash(0, size, lookup);
}

/** A leaf range a proof holds the hash of, bottom up. */
type Range = [lo: number, hi: number];

/** RFC 9162 section 2.1.3.1: the ranges of the inclusion path of leaf index in the tree of size leaves. */
export function inclusionRanges(index: number, size: number): Range[] {
  if (!(index >= 0 && index < size)) throw new RangeError(`leaf ${index} is not in a tree of ${size}`);
  const ranges: Range[] = [];
  let lo = 0;
  let hi = size;
  while (hi - lo > 1) {
    const k = splitPoint(hi - lo);
    if (index < lo + k) {
      ranges.push([lo + k, hi]);
      hi = lo + k;
    } else {
      ranges.push([lo, lo + k]);
      lo += k;
    }
  }
  return ranges.reverse();
}

/** RFC 9162 section 2.1.4.1: the ranges of the consistency proof from the tree of from leaves to the one of to. */
export function consistencyRanges(from: number, to: number): Range[] {
  if (!(from >= 1 && from <= to)) throw new RangeError(`no consistency proof from ${from} to ${to}`);
  const ranges: Range[] = [];
  let lo = 0;
  let hi = to;
  let m = from;
  let whole = true;
  while (m !== hi - lo) {
    const k = splitPoint(hi - lo);
    if (m <= k) {
      ranges.push([lo + k, hi]);
      hi = lo + k;
    } else {
      ranges.push([lo, lo + k]);
      m -= k;
      lo += k;
      whole = false;
    }
  }
  if (!whole) ranges.push([lo, hi]);
  return ranges.reverse();
}

/** The stored nodes a proof of these ranges needs, each once. */
export function nodesOf(ranges: readonly Range[]): NodeKey[] {
  const seen = new Map<string, NodeKey>();
  for (const [lo, hi] of ranges) for (const key of rangeNodes(lo, hi)) seen.set(`${key.level}/${key.index}`, key);
  return [...seen.values()];
}

/** The complete subtrees the tree of size leaves is made of, largest first: what a new leaf is hashed with. */
export function frontierNodes(size: number): NodeKey[] {
  return rangeNodes(0, size);
}

/**
 * The nodes that appending leaves to a tree of size leaves completes, level by level:
 * rows[L] holds the new nodes of level L, the first at index floor(size / 2^L). lookup
 * finds the tree's frontier (frontierNodes(size)): the only old node a new one is hashed
 * with is the left child of a level's first new node.
 */
function completedRows(size: number, leaves: readonly Buffer[], lookup: NodeLookup): Buffer[][] {
  const end = size + leaves.length;
  const rows: Buffer[][] = [[...leaves]];
  for (let level = 1; 2 ** level <= end; level += 1) {
    const below = rows[level - 1]!;
    const belowFirst = Math.floor(size / 2 ** (level - 1));
    const first = Math.floor(size / 2 ** level);
    const count = Math.floor(end / 2 ** level);
    const row: Buffer[] = [];
    for (let index = first; index < count; index += 1) {
      const left = 2 * index >= belowFirst ? below[2 * index - belowFirst] : lookup(level - 1, 2 * index);
      if (!left) throw new MissingNode(level - 1, 2 * index);
      row.push(nodeHash(left, below[2 * index + 1 - belowFirst]!));
    }
    rows.push(row);
  }
  return rows;
}

/** A stored node's key in the maps of nodes read or made. */
export function nodeId(level: number, index: number): string {
  return `${level}/${index}`;
}

/**
 * The tree of size leaves grown by leaves: the nodes they complete (leaves first), a
 * lookup of every node a root or a path of the new tree needs (the new nodes and the old
 * frontier), and the new tree's frontier, which is all the next growth needs.
 */
export function extendTree(
  size: number,
  frontier: ReadonlyMap<string, Buffer>,
  leaves: readonly Buffer[],
): { nodes: TreeNode[]; lookup: NodeLookup; frontier: Map<string, Buffer> } {
  const old: NodeLookup = (level, index) => frontier.get(nodeId(level, index));
  const rows = completedRows(size, leaves, old);
  const lookup: NodeLookup = (level, index) => {
    const first = Math.floor(size / 2 ** level);
    return (index >= first ? rows[level]?.[index - first] : undefined) ?? old(level, index);
  };
  const nodes = rows.flatMap((row, level) => {
    const first = Math.floor(size / 2 ** level);
    return row.map((hash, i) => ({ level, index: first + i, hash }));
  });
  const next = new Map<string, Buffer>();
  for (const { level, index } of frontierNodes(size + leaves.length)) {
    const hash = lookup(level, index);
    if (!hash) throw new MissingNode(level, index);
    next.set(nodeId(level, index), hash);
  }
  return { nodes, lookup, frontier: next };
}

/** A proof's hashes from the stored nodes (base64 is the wire form; this gives raw bytes). */
export function proofHashes(ranges: readonly Range[], lookup: NodeLookup): Buffer[] {
  return ranges.map(([lo, hi]) => rangeHash(lo, hi, lookup));
}
