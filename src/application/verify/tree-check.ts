// The Merkle tree recomputed from the events' hashes as they are read, and compared with
// the stored nodes a page at a time (each read by key): a stored node that differs, or
// is missing, is where the tree was edited; nodes past the log's events were added.
import type { ChainBreak } from './chain-walk.ts';
import { eventLeaf, extendTree, nodeId, type TreeNode } from '../../support/merkle.ts';
import type { AuditReads } from '../../store/audit-reads.ts';

/** How many of the tree's leaves are checked against the stored nodes at once. */
const TREE_PAGE = 1000;

/** Why a stored node is not the one the events make (it differs, or is missing). */
function nodeProblem(node: TreeNode, found: Buffer | undefined): ChainBreak {
  const seq = node.index * 2 ** node.level + 2 ** node.level;
  return {
    seq,
    reason:
      `the Merkle tree's node at level ${node.level}, index ${node.index} (up to seq ${seq}) is ` +
      `${found ? `${found.toString('base64')}, not ${node.hash.toString('base64')} as the events give` : 'missing'}: the tree (tree_nodes) was edited`,
  };
}

export function treeCheck(store: Pick<AuditReads, 'treeNodes' | 'treeNodeCount'>) {
  let size = 0;
  let made = 0;
  let frontier = new Map<string, Buffer>();
  let leaves: Buffer[] = [];
  const flush = async (): Promise<ChainBreak | undefined> => {
    if (leaves.length === 0) return undefined;
    const grown = extendTree(size, frontier, leaves);
    const stored = await store.treeNodes(grown.nodes);
    for (const node of grown.nodes) {
      const found = stored.get(nodeId(node.level, node.index));
      if (!found?.equals(node.hash)) return nodeProblem(node, found);
    }
    made += grown.nodes.length;
    size += leaves.length;
    frontier = grown.frontier;
    leaves = [];
    return undefined;
  };
  return {
    /** The next event's hash; where the tree broke once a page of them is checked. */
    async add(hash: string | null): Promise<ChainBreak | undefined> {
      leaves.push(eventLeaf(hash ?? ''));
      return leaves.length >= TREE_PAGE ? flush() : undefined;
    },
    /** After the last event: the leaves not yet checked, and no node past them. */
    async end(): Promise<ChainBreak | undefined> {
      const broken = await flush();
      if (broken) return broken;
      const count = await store.treeNodeCount();
      if (count === made) return undefined;
      return {
        seq: size,
        reason: `the Merkle tree holds ${count} nodes where the log's ${size} events make ${made}: nodes were added to tree_nodes`,
      };
    },
  };
}
