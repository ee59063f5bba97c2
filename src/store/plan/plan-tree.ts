// The Merkle tree's part of a batch plan: the nodes a batch's events complete, the root
// after them, the frontier the next plan starts from, and each receipt's inclusion path.
// Pure: the frontier it starts from was read by the adapter.
import type { PendingReceipt } from '../receipts/receipts.ts';
import { eventLeaf, extendTree, inclusionRanges, proofHashes, treeRoot, type TreeNode } from '../../support/merkle.ts';

/** The tree of a plan's events: the nodes they complete, and its size and root after them. */
export interface PlanTree {
  nodes: TreeNode[];
  size: number;
  /** Undefined when the plan appends no event. */
  root?: Buffer;
}

/**
 * The tree of size `before` (its frontier given) after the plan's events. Every node a
 * path or the root needs is new or on the old frontier, so nothing more is read. Puts
 * each receipt's inclusion path in it.
 */
export function treeAfter(
  before: number,
  frontier: ReadonlyMap<string, Buffer>,
  events: readonly { hash: string }[],
  receipts: PendingReceipt[],
): { tree: PlanTree; frontier: Map<string, Buffer> } {
  // A batch of stored refusals alone grows nothing (and needs no frontier).
  if (events.length === 0) return { tree: { nodes: [], size: before }, frontier: new Map(frontier) };
  const extended = extendTree(
    before,
    frontier,
    events.map((e) => eventLeaf(e.hash)),
  );
  const size = before + events.length;
  for (const receipt of receipts) receipt.proof = proofHashes(inclusionRanges(Number(receipt.seq) - 1, size), extended.lookup);
  return { tree: { nodes: extended.nodes, size, root: treeRoot(size, extended.lookup) }, frontier: extended.frontier };
}
