// What a verifier computes from a proof, as RFC 9162 section 2.1 gives it: the root an
// inclusion path leads to, and whether a consistency proof shows one tree a prefix of
// another. Nothing here reads a stored node: the proof's hashes are all it has.
import { nodeHash } from './merkle.ts';

/**
 * RFC 9162's climb up a proof from the node at index `fn` of a tree whose last index at
 * that level is `sn`: at each step the proof's hash is the node's left sibling (given to
 * `left`) or its right one (given to `right`). False when the proof is longer than the
 * tree is tall or ends below its root.
 */
function climb(fn: number, sn: number, path: readonly Buffer[], left: (c: Buffer) => void, right: (c: Buffer) => void): boolean {
  for (const c of path) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      left(c);
      while (fn % 2 === 0 && fn !== 0) {
        fn = Math.floor(fn / 2);
        sn = Math.floor(sn / 2);
      }
    } else {
      right(c);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0;
}

/** RFC 9162 section 2.1.3.2: the root an inclusion path leads to, or undefined when it cannot be one. */
export function rootFromInclusion(index: number, size: number, leaf: Buffer, proof: readonly Buffer[]): Buffer | undefined {
  if (!(index >= 0 && index < size)) return undefined;
  let r = leaf;
  const reached = climb(
    index,
    size - 1,
    proof,
    (p) => (r = nodeHash(p, r)),
    (p) => (r = nodeHash(r, p)),
  );
  return reached ? r : undefined;
}

/** RFC 9162 section 2.1.4.2: whether proof shows the tree of size `from` (root fromRoot) is a prefix of the one of size `to`. */
export function verifyConsistency(from: number, to: number, fromRoot: Buffer, toRoot: Buffer, proof: readonly Buffer[]): boolean {
  if (from < 1 || from > to) return false;
  if (from === to) return proof.length === 0 && fromRoot.equals(toRoot);
  let path = [...proof];
  // When from is a power of two, the old root is the proof's first node.
  if ((from & (from - 1)) === 0) path = [fromRoot, ...path];
  if (path.length === 0) return false;
  let fn = from - 1;
  let sn = to - 1;
  while (fn % 2 === 1) {
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  let fr = path[0]!;
  let sr = path[0]!;
  const reached = climb(
    fn,
    sn,
    path.slice(1),
    (c) => {
      fr = nodeHash(c, fr);
      sr = nodeHash(c, sr);
    },
    (c) => (sr = nodeHash(sr, c)),
  );
  return reached && fr.equals(fromRoot) && sr.equals(toRoot);
}
