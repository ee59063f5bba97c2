// What verify-log checks of signed heads: a kept GET /v1/log/head answer must carry a
// valid signature of a key the key log lists, for this log; then its digests must be
// extended like any other. And verify-log --url: a running service's log, signing keys
// and signed head checked through the API alone, without the database, against the
// heads kept earlier, and each event of a type its actor's kind writes.
import { eventHash, GENESIS_HASH, type Digest } from '../../store/hash-chain.ts';
import type { SigningKeyInfo } from '../../store/audit-reads.ts';
import { eventTypeProblem } from './actor-checks.ts';
import { keyTimeProblem } from '../signing/trust.ts';
import { headMessage, keyIdOf, publicKeyFromRaw, verifySignature, type HeadFields } from '../../support/signing.ts';
import { AnsweredStatus } from '../mirror/log-source.ts';

export interface SignedHead extends HeadFields {
  signature: { keyId: string; value: string };
}

/** A kept GET /v1/log/head answer (one JSON object), or why it is not one. */
export function parseSignedHead(text: string): SignedHead | string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return 'is not JSON';
  }
  const h = value as Partial<SignedHead> | null;
  const ok =
    typeof h === 'object' &&
    h !== null &&
    typeof h.logId === 'string' &&
    Number.isSafeInteger(h.seq) &&
    typeof h.hash === 'string' &&
    /^[0-9a-f]{64}$/.test(h.hash) &&
    typeof h.keys === 'object' &&
    h.keys !== null &&
    Number.isSafeInteger(h.keys.seq) &&
    typeof h.keys.hash === 'string' &&
    /^[0-9a-f]{64}$/.test(h.keys.hash) &&
    typeof h.time === 'string' &&
    typeof h.signature?.keyId === 'string' &&
    typeof h.signature.value === 'string';
  return ok ? (h as SignedHead) : 'is not a signed GET /v1/log/head answer (logId, seq, hash, keys, time, signature)';
}

/** The head's two digests: the event log's and the key log's. */
export function digestsOfHead(head: SignedHead): Digest[] {
  return [
    { seq: head.seq, hash: head.hash },
    { seq: head.keys.seq, hash: head.keys.hash, chain: 'keys' },
  ];
}

/** Why the head's signature does not hold for this log and these keys; undefined when it does. */
export function headSignatureProblem(head: SignedHead, logId: string, keys: readonly SigningKeyInfo[]): string | undefined {
  if (head.logId !== logId) return `it is a head of log ${head.logId}, not of this log (${logId})`;
  const key = keys.find((k) => k.keyId === head.signature.keyId);
  if (!key) return `its signing key ${head.signature.keyId} is not in the key log`;
  const valid = verifySignature(publicKeyFromRaw(key.publicKey), headMessage(head), Buffer.from(head.signature.value, 'base64url'));
  if (!valid) return `its signature does not verify with key ${key.keyId}`;
  return keyTimeProblem(head.time, key);
}

/** Why a published key list is not one (an id not its key's, a key twice); undefined when it is. */
function signingKeysProblem(keys: readonly SigningKeyInfo[]): string | undefined {
  const seen = new Set<string>();
  for (const k of keys) {
    if (seen.has(k.keyId)) return `signing key ${k.keyId} is listed twice`;
    seen.add(k.keyId);
    try {
      publicKeyFromRaw(k.publicKey);
    } catch {
      return `signing key ${k.keyId} is not an Ed25519 public key`;
    }
    if (keyIdOf(Buffer.from(k.publicKey, 'base64url')) !== k.keyId) return `signing key ${k.keyId} has another key's id`;
  }
  return undefined;
}

type ApiVerdict = { ok: true; events: number; head: SignedHead; keys: number } | { ok: false; reason: string; seq?: number };

/** GETs a path of the service as JSON, with the key; throws with the status on anything but 200. */
type ApiGet = (path: string) => Promise<string>;

export function apiGetter(baseUrl: string, key: string, timeoutMs = 10_000): ApiGet {
  const base = baseUrl.replace(/\/+$/, '');
  return async (path) => {
    const res = await fetch(`${base}${path}`, {
      headers: { Authorization: `Bearer ${key}`, Accept: 'application/json' },
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await res.text();
    if (res.status !== 200) throw new AnsweredStatus(path, res.status, text);
    return text;
  };
}

const PAGE = 1000;

/** The exact seq and petId of each event of a feed page, in order (JSON numbers may exceed 2^53). */
function exactIds(page: string): [string, string][] {
  return [...page.matchAll(/\{"seq":(\d+),"petId":(\d+),/g)].map((m) => [m[1]!, m[2]!]);
}

/** An event as the feed (and an events bundle) gives it; seq and petId are read from the text. */
export interface FeedEvent {
  version: number;
  type: string;
  data: unknown;
  actor: string;
  requestId: string;
  recordedAt: string;
  prevHash: string;
  hash: string;
}

/** The kept heads' event-log digests by seq, or why they cannot all be extended: a kept
 * head not signed for this log, two naming one seq differently, or a key log cut or
 * rewritten since. */
function keptDigests(
  kept: readonly (SignedHead | Digest)[],
  head: SignedHead,
  keys: readonly SigningKeyInfo[],
): Map<number, string> | string {
  const wanted = new Map<number, string>();
  const wantedKeys: Digest[] = [];
  const want = (d: Digest, from: string): string | undefined => {
    if (d.chain === 'keys') {
      wantedKeys.push(d);
      return undefined;
    }
    if (wanted.has(d.seq) && wanted.get(d.seq) !== d.hash) return `${from} names seq ${d.seq} with another hash than another kept head`;
    wanted.set(d.seq, d.hash);
    return undefined;
  };
  for (const k of kept) {
    if (!('signature' in k)) {
      const clash = want(k, 'a kept digest');
      if (clash) return clash;
      continue;
    }
    const wrong = headSignatureProblem(k, head.logId, keys);
    if (wrong) return `a kept head (seq ${k.seq}, ${k.time}): ${wrong}`;
    for (const d of digestsOfHead(k)) {
      const clash = want(d, `the kept head of ${k.time}`);
      if (clash) return clash;
    }
  }
  wanted.set(head.seq, head.hash);
  // The key log's rows are not served: its head can only be compared with kept ones.
  for (const d of wantedKeys) {
    if (d.seq > head.keys.seq) return `the key log ends at key seq ${head.keys.seq}, before a kept head's ${d.seq}: it was truncated`;
    if (d.seq === head.keys.seq && d.hash !== head.keys.hash) {
      return `the key log's head at key seq ${d.seq} differs from a kept head's: it was rewritten`;
    }
  }
  return wanted;
}

/** Why a served event is not the next link after prev, or undefined when it is. */
function feedEventProblem(e: FeedEvent, [seqText, petId]: [string, string], prev: Digest, wanted: Map<number, string>): string | undefined {
  const seq = Number(seqText);
  if (seq !== prev.seq + 1) return `seq ${prev.seq} is followed by ${seq}: events were removed`;
  if (e.prevHash !== prev.hash) return 'prev_hash does not link to the event before it';
  const fields = { ...e, seq: BigInt(seqText), petId: BigInt(petId), data: JSON.stringify(e.data) };
  if (eventHash(fields) !== e.hash) return 'the hash does not match the event: a field was changed';
  // The keys' scopes are not served: a read-only key's event is caught with the database.
  const wrongType = eventTypeProblem(e.actor, e.type);
  if (wrongType) return wrongType;
  const kept = wanted.get(seq);
  if (kept !== undefined && kept !== e.hash) return `the event has hash ${e.hash}, not the kept head's: history up to it was rewritten`;
  return undefined;
}

/** GET /v1/events from the first event to the last, page by page: its head and count, or where it broke. */
async function readFeed(
  get: ApiGet,
  wanted: Map<number, string>,
): Promise<{ ok: true; head: Digest; events: number } | Extract<ApiVerdict, { ok: false }>> {
  let prev: Digest = { seq: 0, hash: GENESIS_HASH };
  let events = 0;
  for (;;) {
    const text = await get(`/v1/events?after=${prev.seq}&limit=${PAGE}`);
    const page = JSON.parse(text) as FeedEvent[];
    const ids = exactIds(text);
    if (ids.length !== page.length) return { ok: false, reason: 'a page of GET /v1/events is not a list of events' };
    for (let i = 0; i < page.length; i++) {
      const e = page[i]!;
      const seq = Number(ids[i]![0]);
      const problem = feedEventProblem(e, ids[i]!, prev, wanted);
      if (problem) return { ok: false, seq, reason: problem };
      prev = { seq, hash: e.hash };
      events++;
    }
    if (page.length < PAGE) return { ok: true, head: prev, events };
  }
}

/**
 * The service's log through GET /v1/events, from its first event: every hash recomputed,
 * seqs without gaps; its signed head (GET /v1/log/head) checked against the published
 * keys and found in the log; and every kept head (signed ones checked too) extended.
 */
export async function verifyThroughApi(get: ApiGet, kept: readonly (SignedHead | Digest)[]): Promise<ApiVerdict> {
  const keys = JSON.parse(await get('/v1/log/signing-keys')) as SigningKeyInfo[];
  const keysWrong = signingKeysProblem(keys);
  if (keysWrong) return { ok: false, reason: keysWrong };
  const head = parseSignedHead(await get('/v1/log/head'));
  if (typeof head === 'string') return { ok: false, reason: `the service's head ${head}` };
  const headWrong = headSignatureProblem(head, head.logId, keys);
  if (headWrong) return { ok: false, reason: `the service's signed head: ${headWrong}` };
  const wanted = keptDigests(kept, head, keys);
  if (typeof wanted === 'string') return { ok: false, reason: wanted };
  const read = await readFeed(get, wanted);
  if (!read.ok) return read;
  const beyond = Math.max(0, ...wanted.keys());
  if (beyond > read.head.seq) {
    return {
      ok: false,
      seq: beyond,
      reason: `the log ends at seq ${read.head.seq}, before a signed or kept head's seq ${beyond}: it was truncated`,
    };
  }
  return { ok: true, events: read.events, head, keys: keys.length };
}
