// The checks every property applies to each answer and to the state it leaves: the
// placeholders a case fills in from the app's state, the Error shape on any refusal, no
// change on a refusal, exactly one event on an accepted PATCH.
import * as assert from 'uvu/assert';
import { ERROR_CODES } from '../../src/http/stages/errors.ts';
import type { TestApp } from '../kit/app.ts';
import { assertErrorShape } from '../kit/http.ts';
import { decodeParam } from './encoding.ts';
import { PET_IDS, STALL_MS } from './setup.ts';
export interface Runtime {
  key: string;
  listEtag: string;
  versionOf(petId: string): number;
}

/** Fills the placeholders the generators leave: the key, versions and the list's ETag. */
export function fill(template: string, rt: Runtime, petId: string): string {
  return template
    .replaceAll('{KEY}', rt.key)
    .replaceAll('{KEY_CUT}', rt.key.slice(0, -1))
    .replaceAll(
      '{KEY_CASE}',
      rt.key.replace(/[a-z]/, (c) => c.toUpperCase()).replace(/^[^a-z]*$/, (k) => `${k}x`),
    )
    .replaceAll('{LIST}', rt.listEtag)
    .replace(/\{VER([+-]\d+)?\}/g, (_, d: string | undefined) => String(rt.versionOf(petId) + Number(d ?? 0)));
}

export function runtime(t: TestApp, state: Snapshot): Runtime {
  return {
    key: t.key,
    listEtag: state.etag,
    versionOf: (petId) => state.versions.get(petId) ?? 1,
  };
}

/** The tracked pet a path names (after decoding), or the first pet. */
export function petOfPath(path: string): string {
  const id = /^\/v1\/inventory\/([^/?#]+)/.exec(path)?.[1];
  const decoded = id === undefined ? '' : decodeParam(id);
  return PET_IDS.includes(decoded) ? decoded : PET_IDS[0]!;
}

export interface Snapshot {
  events: number;
  lastSeq: bigint;
  inventory: string;
  etag: string;
  /** The version of each tracked pet (of PET_IDS), by id. */
  versions: Map<string, number>;
}

export async function snapshot(t: TestApp): Promise<Snapshot> {
  const res = await t.get();
  assert.is(res.status, 200, `GET /v1/inventory answers (${res.text})`);
  assert.match(res.text, /^\[(\{"petId":\d+,"quantity":\d+,"status":"(available|pending|sold)"\},?)*\]$/);
  const log = await t.events();
  const tracked = await t.store.loadEntries(PET_IDS.map((id) => BigInt(id)));
  const versions = new Map([...tracked].map(([id, entry]) => [String(id), entry.version]));
  return { events: log.length, lastSeq: log.at(-1)?.seq ?? 0n, inventory: res.text, etag: String(res.headers.etag), versions };
}

export function entries(inventory: string): Map<string, { quantity: string; status: string }> {
  const map = new Map<string, { quantity: string; status: string }>();
  for (const m of inventory.matchAll(/\{"petId":(\d+),"quantity":(\d+),"status":"(\w+)"\}/g)) {
    map.set(m[1]!, { quantity: m[2]!, status: m[3]! });
  }
  return map;
}

/** One answer as the checks see it, from node:http or parsed off a raw socket. */
export interface Outcome {
  method: string;
  status: number;
  contentType: string | undefined;
  text: string;
  etag: string | undefined;
  ms: number;
}

const isSuccess = (status: number) => (status >= 200 && status < 300) || status === 304;

/**
 * No stall, no 5xx, and the Error shape on anything but 2xx/304. codingRefused: the request
 * names a transfer coding besides chunked, which RFC 9112 answers with 501.
 */
export function checkAnswer(o: Outcome, key: string, label: string, codingRefused = false): void {
  assert.ok(o.ms < STALL_MS, `${label}: answered in ${Math.round(o.ms)} ms`);
  const allowed = codingRefused && o.status === 501 && o.text.includes('"code":"not_implemented"');
  assert.ok(o.status < 500 || allowed, `${label}: no 5xx, got ${o.status} ${o.text}`);
  if (isSuccess(o.status)) return;
  assert.match(String(o.contentType), /^application\/json(;|$)/, `${label}: ${o.status} is application/json`);
  // A HEAD answer carries the headers of the error, not its body.
  if (o.method === 'HEAD') return;
  assertErrorShape({ status: o.status, headers: { 'content-type': o.contentType }, text: o.text }, o.status, ERROR_CODES, label);
  assert.not.ok(o.text.includes(key), `${label}: the key is not echoed`);
}

/**
 * After a request: nothing changed, unless `accepted` is the 2xx answer of a PATCH, in
 * which case exactly one QuantitySet event was appended, for the pet and quantity the
 * answer names, with the answer's ETag, and only that pet's quantity changed.
 */
export async function checkState(t: TestApp, before: Snapshot, accepted: Outcome | undefined, label: string): Promise<Snapshot> {
  const after = await snapshot(t);
  if (!accepted) {
    assert.is(after.events, before.events, `${label}: no event appended`);
    assert.is(after.inventory, before.inventory, `${label}: inventory unchanged`);
    return after;
  }
  assert.is(after.events, before.events + 1, `${label}: exactly one event appended`);
  const [event] = (await t.events()).filter((e) => e.seq > before.lastSeq);
  assert.ok(event, `${label}: the new event is after seq ${before.lastSeq}`);
  assert.is(event.type, 'QuantitySet', label);
  assert.is(event.actor, 'tester', label);
  const item = /^\{"petId":(\d+),"quantity":(\d+),"status":"(\w+)"\}$/.exec(accepted.text);
  assert.ok(item, `${label}: the answer is an InventoryItem: ${accepted.text}`);
  const [, petId, quantity, status] = item;
  assert.is(String(event.petId), petId, `${label}: the event is the answered pet's`);
  assert.is((JSON.parse(event.data) as { quantity: unknown }).quantity, Number(quantity), `${label}: event quantity`);
  assert.is(accepted.etag, `"${event.version}"`, `${label}: ETag is the new version`);
  const was = entries(before.inventory);
  const now = entries(after.inventory);
  assert.equal([...now.keys()], [...was.keys()], `${label}: same entries`);
  for (const [id, entry] of now) {
    if (id === petId) assert.equal(entry, { quantity: quantity!, status: was.get(id)!.status }, `${label}: pet ${id}`);
    else assert.equal(entry, was.get(id), `${label}: pet ${id} untouched`);
  }
  assert.is(status, was.get(petId!)!.status, `${label}: PATCH leaves the status alone`);
  return after;
}

export function tally(seen: Map<number, number>, status: number): void {
  seen.set(status, (seen.get(status) ?? 0) + 1);
}

export function report(name: string, seen: Map<number, number>): void {
  if (process.env.FUZZ_VERBOSE) {
    const counts = [...seen]
      .sort(([a], [b]) => a - b)
      .map(([s, n]) => `${s}:${n}`)
      .join(' ');
    process.stderr.write(`\n  ${name}: ${counts}\n`);
  }
}
