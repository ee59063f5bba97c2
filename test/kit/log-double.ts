// A stand-in for the service's verifiable-log routes, as the contract gives them
// (GET /v1/log/checkpoint, /v1/log/proof/inclusion, /v1/log/proof/consistency,
// /v1/log/signing-keys with verifierKey), built on the same pure Merkle and note code.
// It serves a log a test can rewrite at will (a fork, a cut, proofs with a byte flipped,
// a checkpoint signed by another key), which a real store refuses to become: the monitor,
// the receipt checker and the guide's verifiers must catch each. Bytes served are counted.
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { checkpointText, endorsementText, originOf, signedNote, verifierKey } from '../../src/support/checkpoint.ts';
import {
  consistencyRanges,
  eventLeaf,
  extendTree,
  inclusionRanges,
  proofHashes,
  treeRoot,
  type NodeLookup,
} from '../../src/support/merkle.ts';
import { keyIdOf, receiptHeaderOf, receiptMessage } from '../../src/support/signing.ts';

export const DOUBLE_KEY = 'pinv_doubledoubledoubledoubledouble';
const LOG_ID = '6f1c2d3e-8a9b-4c0d-9e1f-2a3b4c5d6e7f';
const TIME = '2026-11-27T12:00:00.000Z';

export interface DoubleKey {
  privateKey: KeyObject;
  raw: Buffer;
  verifierKey: string;
  keyId: string;
}

export function newKey(seed?: Buffer): DoubleKey {
  const privateKey = seed
    ? createPrivateKey({ key: Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), seed]), format: 'der', type: 'pkcs8' })
    : generateKeyPairSync('ed25519').privateKey;
  const raw = createPublicKey(privateKey).export({ format: 'der', type: 'spki' }).subarray(-32);
  return { privateKey, raw, verifierKey: verifierKey(originOf(LOG_ID), raw), keyId: keyIdOf(raw) };
}

/** The endorsement of `of` in the double's log, signed by `by` at the double's time. */
export function endorsement(by: DoubleKey, of: DoubleKey): string {
  const origin = originOf(LOG_ID);
  const text = endorsementText(LOG_ID, of.verifierKey, TIME);
  return signedNote(text, origin, by.raw, sign(null, Buffer.from(text), by.privateKey));
}

/** An event hash (hex) for leaf n of a history named `history`: two histories differ everywhere. */
function eventHashOf(history: string, n: number): string {
  return createHash('sha256').update(`${history}/${n}`).digest('hex');
}

export interface LogDouble {
  url: string;
  key: DoubleKey;
  /** The event hashes, by seq - 1. */
  events: string[];
  /** Which key signs the checkpoints served (the listed key unless changed). */
  signer: DoubleKey;
  /** Flips a byte of the first hash of each proof served; adds a line to the signatures
   * of the checkpoint served. */
  tamper: { inclusion: boolean; consistency: boolean; signatureLine?: string };
  /** When the key log says the listed key was retired (null: it signs on). */
  retiredAt: string | null;
  /** Keys the key log lists after the double's own: each with its endorsement note, or none. */
  moreKeys: { key: DoubleKey; endorsedBy: string | null }[];
  append(count: number, history?: string): void;
  /** The signed note of the tree of the first size events (all of them unless given). */
  checkpoint(size?: number): string;
  /** The version 2 Log-Receipt of seq, its checkpoint the tree of size events. */
  receipt(seq: number, size?: number): string;
  /** The version 1 Log-Receipt of seq. */
  receiptV1(seq: number): string;
  /** Bytes of every answer's body so far. */
  served(): number;
  close(): Promise<void>;
}

function lookupOf(events: readonly string[]): NodeLookup {
  const nodes = new Map<string, Buffer>();
  for (const n of extendTree(0, new Map(), events.map(eventLeaf)).nodes) nodes.set(`${n.level}/${n.index}`, n.hash);
  return (level, index) => nodes.get(`${level}/${index}`);
}

export async function startLogDouble(): Promise<LogDouble> {
  const key = newKey();
  let served = 0;
  const d: LogDouble = {
    url: '',
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
    key,
    events: [],
    signer: key,
    tamper: { inclusion: false, consistency: false },
    retiredAt: null,
    moreKeys: [],
    append(count, history = 'main') {
      const from = d.events.length;
      for (let i = 0; i < count; i++) d.events.push(eventHashOf(history, from + i));
    },
    checkpoint(size = d.events.length) {
      const origin = originOf(LOG_ID);
      const text = checkpointText({
        origin,
        size,
        root: treeRoot(size, lookupOf(d.events)),
        keys: { seq: 1, hash: 'ab'.repeat(32) },
        time: TIME,
      });
      return signedNote(text, origin, d.signer.raw, sign(null, Buffer.from(text), d.signer.privateKey));
    },
    receipt(seq, size = d.events.length) {
      const proof = proofHashes(inclusionRanges(seq - 1, size), lookupOf(d.events)).map((h) => `:${h.toString('base64')}:`);
      const note = Buffer.from(d.checkpoint(size)).toString('base64');
      return `v=2, log="${LOG_ID}", seq=${seq}, hash="${d.events[seq - 1]}", checkpoint=:${note}:, proof=(${proof.join(' ')})`;
    },
    receiptV1(seq) {
      const hash = d.events[seq - 1]!;
      const sig = sign(null, Buffer.from(receiptMessage(LOG_ID, seq, hash)), d.signer.privateKey).toString('base64');
      return receiptHeaderOf(LOG_ID, seq, hash, d.signer.keyId, sig);
    },
    served: () => served,
  };
  const proofAnswer = (fields: Record<string, number>, hashes: Buffer[], tampered: boolean) => {
    const out = hashes.map((h) => Buffer.from(h));
    if (tampered && out[0]) out[0][0]! ^= 1;
    return JSON.stringify({ ...fields, hashes: out.map((h) => h.toString('base64')) });
  };
  const answer = (path: string, q: URLSearchParams): [number, string] => {
    const size = d.events.length;
    const n = (name: string) => Number(q.get(name));
    switch (path) {
      case '/v1/log/checkpoint':
        return [200, `${d.checkpoint()}${d.tamper.signatureLine ?? ''}`];
      case '/v1/log/signing-keys':
        return [
          200,
          JSON.stringify([
            {
              keyId: key.keyId,
              publicKey: key.raw.toString('base64url'),
              verifierKey: key.verifierKey,
              addedAt: TIME,
              retiredAt: d.retiredAt,
              endorsedBy: null,
            },
            ...d.moreKeys.map((k) => ({
              keyId: k.key.keyId,
              publicKey: k.key.raw.toString('base64url'),
              verifierKey: k.key.verifierKey,
              addedAt: TIME,
              retiredAt: null,
              endorsedBy: k.endorsedBy,
            })),
          ]),
        ];
      case '/v1/log/proof/inclusion':
        if (n('size') > size) return [409, JSON.stringify({ code: 'tree_size_past_head', message: `size ${n('size')}`, status: 409 })];
        return [
          200,
          proofAnswer(
            { seq: n('seq'), size: n('size') },
            proofHashes(inclusionRanges(n('seq') - 1, n('size')), lookupOf(d.events)),
            d.tamper.inclusion,
          ),
        ];
      case '/v1/log/proof/consistency': {
        if (n('to') > size) return [409, JSON.stringify({ code: 'tree_size_past_head', message: `size ${n('to')}`, status: 409 })];
        const hashes = n('from') === n('to') ? [] : proofHashes(consistencyRanges(n('from'), n('to')), lookupOf(d.events));
        return [200, proofAnswer({ from: n('from'), to: n('to') }, hashes, d.tamper.consistency)];
      }
      default:
        return [404, JSON.stringify({ code: 'not_found', message: path, status: 404 })];
    }
  };
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://double');
    const [status, body] =
      req.headers.authorization === `Bearer ${DOUBLE_KEY}`
        ? answer(url.pathname, url.searchParams)
        : [401, JSON.stringify({ code: 'unauthorized', message: 'no key', status: 401 })];
    served += Buffer.byteLength(body);
    res.writeHead(status, { 'content-type': url.pathname === '/v1/log/checkpoint' ? 'text/plain; charset=utf-8' : 'application/json' });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  d.url = `http://127.0.0.1:${port}`;
  return d;
}
