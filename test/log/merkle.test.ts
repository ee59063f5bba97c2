// The Merkle tree and the checkpoint formats against the published test vectors (made
// with an independent RFC 6962 implementation and checked with Go's note and tlog
// packages), and the stored-node arithmetic against the RFC's recursive definitions,
// computed here the slow way, for every tree up to 70 leaves.
import { createHash, createPrivateKey, createPublicKey, sign, verify } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import {
  consistencyRanges,
  EMPTY_ROOT,
  eventLeaf,
  extendTree,
  frontierNodes,
  inclusionRanges,
  nodeHash,
  proofHashes,
  treeRoot,
  type NodeLookup,
} from '../../src/support/merkle.ts';
import { rootFromInclusion, verifyConsistency } from '../../src/support/merkle-verify.ts';
import {
  checkpointText,
  noteSigners,
  parseCheckpoint,
  parseNote,
  parseVerifierKey,
  signedNote,
  verifierKey,
  type Verifier,
} from '../../src/support/checkpoint.ts';

const vectors = JSON.parse(readFileSync(new URL('./log-vectors.json', import.meta.url), 'utf8')) as Record<string, unknown> & {
  seedHex: string;
  publicKeyBase64: string;
  verifierKey: string;
  eventHashes: string[];
  leafHashes: string[];
  root3: string;
  checkpoint3: string;
  checkpoint2: string;
  inclusionSeq2Size3: string[];
  consistency2to3: string[];
  emptyRoot: string;
};
const b64 = (b: Buffer) => b.toString('base64');

/** A store of nodes built leaf by leaf, as the stores build theirs: extendTree in batches of the given sizes. */
function buildTree(leaves: readonly Buffer[], batches: readonly number[] = [leaves.length]): Map<string, Buffer> {
  const stored = new Map<string, Buffer>();
  const lookup: NodeLookup = (level, index) => stored.get(`${level}/${index}`);
  let size = 0;
  for (const n of batches) {
    // extendTree is given only the frontier of the tree it appends to.
    const frontier = new Map(frontierNodes(size).map((k) => [`${k.level}/${k.index}`, lookup(k.level, k.index)!]));
    for (const node of extendTree(size, frontier, leaves.slice(size, size + n)).nodes) {
      assert.not.ok(stored.has(`${node.level}/${node.index}`), `node ${node.level}/${node.index} made twice`);
      stored.set(`${node.level}/${node.index}`, node.hash);
    }
    size += n;
  }
  return stored;
}

/** RFC 9162 MTH, recursively. */
function mth(leaves: readonly Buffer[]): Buffer {
  if (leaves.length === 0) return createHash('sha256').digest();
  if (leaves.length === 1) return leaves[0]!;
  let k = 1;
  while (k * 2 < leaves.length) k *= 2;
  return nodeHash(mth(leaves.slice(0, k)), mth(leaves.slice(k)));
}

/** RFC 9162 PATH, recursively. */
function path(m: number, leaves: readonly Buffer[]): Buffer[] {
  if (leaves.length <= 1) return [];
  let k = 1;
  while (k * 2 < leaves.length) k *= 2;
  return m < k ? [...path(m, leaves.slice(0, k)), mth(leaves.slice(k))] : [...path(m - k, leaves.slice(k)), mth(leaves.slice(0, k))];
}

/** RFC 9162 SUBPROOF, recursively. */
function subproof(m: number, leaves: readonly Buffer[], whole: boolean): Buffer[] {
  const n = leaves.length;
  if (m === n) return whole ? [] : [mth(leaves)];
  let k = 1;
  while (k * 2 < n) k *= 2;
  return m <= k
    ? [...subproof(m, leaves.slice(0, k), whole), mth(leaves.slice(k))]
    : [...subproof(m - k, leaves.slice(k), false), mth(leaves.slice(0, k))];
}

const leavesOf = (n: number) => Array.from({ length: n }, (_, i) => eventLeaf(createHash('sha256').update(`event ${i}`).digest('hex')));

const vectorsSuite = suite('the published vectors');

vectorsSuite('leaves, root and the empty root', () => {
  const leaves = vectors.eventHashes.map(eventLeaf);
  assert.equal(leaves.map(b64), vectors.leafHashes);
  const stored = buildTree(leaves);
  assert.is(b64(treeRoot(3, (l, i) => stored.get(`${l}/${i}`))), vectors.root3);
  assert.is(b64(EMPTY_ROOT), vectors.emptyRoot);
  assert.is(b64(treeRoot(0, () => undefined)), vectors.emptyRoot);
});

vectorsSuite('the inclusion proof of seq 2 in 3 and the consistency proof from 2 to 3', () => {
  const leaves = vectors.eventHashes.map(eventLeaf);
  const stored = buildTree(leaves, [1, 1, 1]);
  const lookup: NodeLookup = (l, i) => stored.get(`${l}/${i}`);
  assert.equal(proofHashes(inclusionRanges(1, 3), lookup).map(b64), vectors.inclusionSeq2Size3);
  assert.equal(proofHashes(consistencyRanges(2, 3), lookup).map(b64), vectors.consistency2to3);
  assert.equal(consistencyRanges(3, 3), []);
});

/** The PKCS#8 DER of an Ed25519 private key is a fixed prefix and the 32-byte seed. */
const vectorKey = () =>
  createPrivateKey({
    key: Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), Buffer.from(vectors.seedHex, 'hex')]),
    format: 'der',
    type: 'pkcs8',
  });

vectorsSuite('the checkpoints come out byte for byte, and verify with the verifier key', () => {
  const key = vectorKey();
  const der = createPublicKey(key).export({ type: 'spki', format: 'der' });
  const raw = der.subarray(der.length - 32);
  assert.is(b64(raw), vectors.publicKeyBase64);
  const origin = 'petstore-inventory/6f1c2d3e-8a9b-4c0d-9e1f-2a3b4c5d6e7f';
  assert.is(verifierKey(origin, raw), vectors.verifierKey);
  const keys = { seq: 2, hash: 'ab'.repeat(32) };
  for (const [size, root, time, expected] of [
    [3, vectors.root3, '2026-11-27T12:00:00.000Z', vectors.checkpoint3],
    [2, 'fRyF4sWA+DEawiyg0/UpTTjmwDMbLK29zf9uGMwRwWs=', '2026-11-27T11:59:00.000Z', vectors.checkpoint2],
  ] as const) {
    const text = checkpointText({ origin, size, root: Buffer.from(root, 'base64'), keys, time });
    assert.is(signedNote(text, origin, raw, sign(null, Buffer.from(text), key)), expected);
    const note = parseNote(expected);
    if (note instanceof Error) throw note;
    const verifier = parseVerifierKey(vectors.verifierKey) as Verifier;
    assert.is(noteSigners(note, [verifier]).length, 1);
    assert.equal(parseCheckpoint(note.text), { origin, size, root: Buffer.from(root, 'base64'), keys, time });
  }
});

vectorsSuite('a note whose text or signature changed verifies with no key', () => {
  const verifier = parseVerifierKey(vectors.verifierKey) as Verifier;
  for (const forged of [vectors.checkpoint3.replace('\n3\n', '\n4\n'), vectors.checkpoint3.replace('p1Cl4zIN', 'p1Cl4zIM')]) {
    const note = parseNote(forged);
    if (note instanceof Error) throw note;
    assert.is(noteSigners(note, [verifier]).length, 0);
  }
  assert.instance(parseVerifierKey(vectors.verifierKey.replace('+a750a5e3+', '+a750a5e4+')), Error);
  assert.instance(parseNote('no note'), Error);
  assert.instance(parseCheckpoint('petstore-inventory/x\n1\n'), Error);
  // Go's note package verifies the same bytes; a stranger's check with Node's crypto:
  const note = parseNote(vectors.checkpoint3) as { text: string; signatures: { signature: Buffer }[] };
  assert.ok(verify(null, Buffer.from(note.text), createPublicKey(vectorKey()), note.signatures[0]!.signature));
});

vectorsSuite.run();

const arithmetic = suite('the stored nodes against the recursive definitions');

arithmetic('every root, inclusion path and consistency proof up to 70 leaves, built in uneven batches', () => {
  const all = leavesOf(70);
  const stored = buildTree(all, [1, 2, 5, 1, 7, 16, 3, 1, 30, 4]);
  const lookup: NodeLookup = (l, i) => stored.get(`${l}/${i}`);
  for (let n = 1; n <= 70; n += 1) {
    const leaves = all.slice(0, n);
    const root = mth(leaves);
    assert.ok(treeRoot(n, lookup).equals(root), `root of ${n}`);
    for (let m = 0; m < n; m += 1) {
      const proof = proofHashes(inclusionRanges(m, n), lookup);
      assert.equal(proof, path(m, leaves), `inclusion ${m} in ${n}`);
      assert.ok(rootFromInclusion(m, n, leaves[m]!, proof)?.equals(root), `inclusion ${m} in ${n} verifies`);
      const consistency = proofHashes(consistencyRanges(m + 1, n), lookup);
      assert.equal(consistency, subproof(m + 1, leaves, true), `consistency ${m + 1} to ${n}`);
      assert.ok(verifyConsistency(m + 1, n, mth(all.slice(0, m + 1)), root, consistency), `consistency ${m + 1} to ${n} verifies`);
    }
  }
});

arithmetic('a proof with a hash changed, dropped or added does not verify', () => {
  const all = leavesOf(21);
  const stored = buildTree(all);
  const lookup: NodeLookup = (l, i) => stored.get(`${l}/${i}`);
  const root = treeRoot(21, lookup);
  const proof = proofHashes(inclusionRanges(6, 21), lookup);
  const flipped = proof.map((h, i) => (i === 2 ? Buffer.from(h.map((b, j) => (j === 0 ? b ^ 1 : b))) : h));
  assert.not.ok(rootFromInclusion(6, 21, all[6]!, flipped)?.equals(root));
  assert.is(rootFromInclusion(6, 21, all[6]!, proof.slice(1)), undefined);
  assert.is(rootFromInclusion(6, 21, all[6]!, [...proof, proof[0]!]), undefined);
  assert.not.ok(rootFromInclusion(7, 21, all[6]!, proof)?.equals(root));
  const consistency = proofHashes(consistencyRanges(13, 21), lookup);
  const old = treeRoot(13, lookup);
  assert.ok(verifyConsistency(13, 21, old, root, consistency));
  assert.not.ok(verifyConsistency(13, 21, old, root, consistency.slice(1)));
  assert.not.ok(verifyConsistency(13, 21, treeRoot(12, lookup), root, consistency));
  assert.not.ok(verifyConsistency(12, 21, old, root, consistency));
});

arithmetic('about two stored nodes a leaf, and a proof reads O(log n) of them', () => {
  const stored = buildTree(leavesOf(1000), [100, 1, 899]);
  assert.ok(stored.size < 2 * 1000);
  assert.ok(frontierNodes(1000).length <= 10);
});

arithmetic.run();
