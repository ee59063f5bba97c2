// What the tests of the change feed (GET /v1/events) share: its events parsed and their
// chain checked, a seeded app, a stream opened with a key.
import * as assert from 'uvu/assert';
import { eventHash } from '../../src/store/hash-chain.ts';
import type { TestApp } from './app.ts';
import { trackPets } from './fixtures.ts';
import { parseJson } from './http.ts';
import { openStream, type SseStream } from './sse.ts';

export const BIG = 9223372036854775807n;
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** An event object as the feed sends it, seq and petId kept as text (they can pass 2^53). */
export interface FeedEvent {
  seq: string;
  petId: string;
  version: number;
  type: string;
  data: Record<string, unknown>;
  actor: string;
  requestId: string;
  recordedAt: string;
  prevHash: string;
  hash: string;
}

/** Parses feed JSON with every integer of 16 digits or more kept as its digits. */
export function parseEvents(text: string): FeedEvent[] {
  return parseJson<FeedEvent[]>(text.replace(/"(seq|petId)":(\d+)/g, '"$1":"$2"'));
}
export function parseEvent(text: string): FeedEvent {
  return parseEvents(`[${text}]`)[0]!;
}

/** Checks each event's hash against its fields and its link to the one before. */
export function assertChain(events: FeedEvent[], prev: string): string {
  for (const e of events) {
    assert.is(e.prevHash, prev, `seq ${e.seq} links to the one before`);
    const hash = eventHash({ ...e, seq: BigInt(e.seq), petId: BigInt(e.petId), data: JSON.stringify(e.data) });
    assert.is(hash, e.hash, `seq ${e.seq}: the hash covers the fields sent`);
    prev = e.hash;
  }
  return prev;
}

export async function seed(t: TestApp, pets = 5, patches = 20): Promise<void> {
  await trackPets(
    t.store,
    [...Array(pets).keys()].map((i) => ({ petId: i + 1, quantity: i })),
  );
  await t.track(BIG, 3);
  for (let i = 0; i < patches; i++) assert.is((await t.patch((i % pets) + 1, { quantity: i })).status, 200);
}

export function stream(t: TestApp, query = '', headers: Record<string, string> = {}, key = t.key): Promise<SseStream> {
  return openStream(t.port, `/v1/events${query}`, { Authorization: `Bearer ${key}`, ...headers });
}

/** Seqs of the messages, in the order they arrived. */
export const seqsOf = (s: SseStream) => s.messages.map((m) => BigInt(m.id.split(':')[0]!));

/** Pets of the marker events, far from those a test tracks. */
let markers = 7_000_000_000n;

/**
 * The seqs the stream sent before a marker, an event committed once it had sent `count`:
 * it sends in order, so whatever more it sent (an event twice, one too many) is among
 * them by the time the marker comes, with no wait for a time. The marker, checked to
 * come last, is left out.
 */
export async function seqsBeforeMarker(t: TestApp, s: SseStream, count: number, timeoutMs?: number): Promise<bigint[]> {
  await s.waitFor(count, timeoutMs);
  await t.track(++markers, 1);
  const marker = (await t.events()).at(-1)!.seq;
  await s.waitForSeq(marker, timeoutMs);
  const seqs = seqsOf(s);
  assert.is(seqs.at(-1), marker, 'the marker comes last');
  return seqs.slice(0, -1);
}

export function assertExactlyOnce(got: bigint[], table: bigint[], label: string): void {
  assert.is(got.length, table.length, `${label}: as many as the table`);
  assert.equal(got, table, `${label}: every event once, in seq order`);
}
