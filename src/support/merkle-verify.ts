// What a verifier computes from a proof, as RFC 9162 section 2.1 gives it: the root an
// inclusion path leads to, and whether a consistency proof shows one tree a prefix of
// another. Nothing here reads a stored node: the proof's hashes are all it has.
import { nodeHash } from './merkle.ts';

/** RFC 9162 section 2.1.3.2: the root an inclusion path leads to, or undefined when it cannot be one. */
export function rootFromInclusion(index: number, size: number, leaf: Buffer, proof: readonly Buffer[]): Buffer | undefined {
  if (!(index >= 0 && index < size)) return undefined;
  let fn = index;
  let sn = size - 1;
  let r = leaf;
  for (const p of proof) {
    if (sn === 0) return undefined;
    if (fn % 2 === 1 || fn === sn) {
      r = nodeHash(p, r);
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        }
      }
    } else {
      r = nodeHash(r, p);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 ? r : undefined;
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
  for (const c of path.slice(1)) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      fr = nodeHash(c, fr);
      sr = nodeHash(c, sr);
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        }
      }
    } else {
      sr = nodeHash(sr, c);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 && fr.equals(fromRoot) && sr.equals(toRoot);
}
