// The Merkle tree's frontier as the tree_nodes table holds it: what the next leaves are
// folded onto, for the write path and for a history appended to a copy.
import type { Db } from './database.ts';
import { frontierNodes, nodeId } from '../../support/merkle.ts';

/** Reads the frontier of a log of `size` events: a handful of lookups by key. */
export function makeFrontierReader(db: Db): (size: number) => Map<string, Buffer> {
  const storedNode = db.prepare('SELECT hash FROM tree_nodes WHERE level = ? AND idx = ?').pluck();
  return (size) => {
    const frontier = new Map<string, Buffer>();
    for (const { level, index } of frontierNodes(size)) {
      const hash = storedNode.get(level, index) as Buffer | undefined;
      if (hash) frontier.set(nodeId(level, index), hash);
    }
    return frontier;
  };
}
