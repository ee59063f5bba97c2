// The change feed, GET /v1/events, on every store: JSON pages against the table, and the
// Server-Sent Events stream (catch-up, live, resume, bounds, revocation, shutdown).
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import * as assert from 'uvu/assert';
import { buildApp } from '../src/app.ts';
import { makeFeed } from '../src/feed/hub.ts';
import { createHttpServer } from '../src/http/node-server.ts';
import { createLogger } from '../src/logger.ts';
import { rebuildProjection } from '../src/rebuild.ts';
import { eventHash, GENESIS_HASH } from '../src/store/hash-chain.ts';
import type { InventoryStore } from '../src/store/port.ts';
import type { TestApp } from './kit/app.ts';
import { trackPets } from './kit/fixtures.ts';
import { assertErrorShape, parseJson } from './kit/http.ts';
import { openStream, type SseStream } from './kit/sse.ts';
import { appSuite } from './kit/suites.ts';

const BIG = 9223372036854775807n;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** An event object as the feed sends it, seq and petId kept as text (they can pass 2^53). */
interface FeedEvent {
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
function parseEvents(text: string): FeedEvent[] {
  return parseJson<FeedEvent[]>(text.replace(/"(seq|petId)":(\d+)/g, '"$1":"$2"'));
}
function parseEvent(text: string): FeedEvent {
  return parseEvents(`[${text}]`)[0]!;
}

/** Checks each event's hash against its fields and its link to the one before. */
function assertChain(events: FeedEvent[], prev: string): string {
  for (const e of events) {
    assert.is(e.prevHash, prev, `seq ${e.seq} links to the one before`);
    const hash = eventHash({ ...e, seq: BigInt(e.seq), petId: BigInt(e.petId), data: JSON.stringify(e.data) });
    assert.is(hash, e.hash, `seq ${e.seq}: the hash covers the fields sent`);
    prev = e.hash;
  }
  return prev;
}

async function seed(t: TestApp, pets = 5, patches = 20): Promise<void> {
  await trackPets(
    t.store,
    [...Array(pets).keys()].map((i) => ({ petId: i + 1, quantity: i })),
  );
  await t.track(BIG, 3);
  for (let i = 0; i < patches; i++) assert.is((await t.patch((i % pets) + 1, { quantity: i })).status, 200);
}

function stream(t: TestApp, query = '', headers: Record<string, string> = {}, key = t.key): Promise<SseStream> {
  return openStream(t.port, `/v1/events${query}`, { Authorization: `Bearer ${key}`, ...headers });
}

/** Seqs of the messages, in the order they arrived. */
const seqsOf = (s: SseStream) => s.messages.map((m) => BigInt(m.id));

function assertExactlyOnce(got: bigint[], table: bigint[], label: string): void {
  assert.is(got.length, table.length, `${label}: as many as the table`);
  assert.equal(got, table, `${label}: every event once, in seq order`);
}

const test = appSuite('the change feed');

test('pages hold every event once, in seq order, for after at every boundary and any limit', async ({ t }) => {
  await seed(t);
  const table = await t.events();
  const seqs = table.map((e) => e.seq);
  for (const limit of [1, 7, 100, 1000]) {
    for (let i = 0; i <= seqs.length; i++) {
      const after = i === 0 ? 0n : seqs[i - 1]!;
      const got: bigint[] = [];
      let path = `/v1/events?after=${after}&limit=${limit}`;
      for (;;) {
        const res = await t.get(path);
        assert.is(res.status, 200, res.text);
        const page = parseEvents(res.text);
        assert.ok(page.length <= limit, 'at most limit');
        const next = /^<([^>]+)>; rel="next"$/.exec(String(res.headers.link));
        assert.ok(next, `a Link to the next page: ${String(res.headers.link)}`);
        path = next[1]!;
        if (page.length === 0) break;
        got.push(...page.map((e) => BigInt(e.seq)));
        // Only checked on the widest pages: the rest is the same rows.
        if (limit === 1000 && i === 0) {
          assertChain(page, GENESIS_HASH);
          page.forEach((e, k) => {
            const row = table[k]!;
            assert.equal(
              [e.seq, e.petId, e.version, e.type, JSON.stringify(e.data), e.actor, e.requestId, e.recordedAt],
              [String(row.seq), String(row.petId), Number(row.version), row.type, row.data, row.actor, row.requestId, row.recordedAt],
            );
          });
        }
      }
      assert.equal(got, seqs.slice(i), `after=${after} limit=${limit}`);
    }
  }
  const res = await t.get('/v1/events');
  assert.is(res.headers['cache-control'], 'no-store');
  assert.match(String(res.headers['content-type']), /^application\/json/);
  assert.is(parseEvents(res.text).length, Math.min(100, seqs.length), 'limit 100 by default');
  assert.ok(res.text.includes(`"petId":${BIG},`), 'int64 ids as bare exact numbers');
  assert.is(res.headers.link, `</v1/events?after=${seqs[seqs.length - 1]}&limit=100>; rel="next"`);
  const empty = await t.get(`/v1/events?after=${seqs[seqs.length - 1]}`);
  assert.is(empty.text, '[]', 'nothing yet');
  assert.is(empty.headers.link, `</v1/events?after=${seqs[seqs.length - 1]}&limit=100>; rel="next"`, 'the next page is the same place');
  assert.is((await t.get(`/v1/events?after=${BIG}`)).text, '[]');
});

test('bad parameters are 400 in the Error shape; no key is 401; other methods 405', async ({ t }) => {
  await seed(t, 2, 2);
  for (const query of [
    'after=-1',
    'after=abc',
    'after=01',
    'after=1.5',
    'after=1e3',
    'after=',
    'after=9223372036854775808',
    'limit=0',
    'limit=1001',
    'limit=-5',
    'limit=1.0',
    'limit=',
    'limit=abc',
    'after=1&after=2',
    'limit=5&limit=6',
    'from=3',
  ]) {
    assertErrorShape(await t.get(`/v1/events?${query}`), 400, 'bad_request', query);
  }
  assertErrorShape(await t.get('/v1/events', { Accept: 'text/event-stream', 'Last-Event-ID': 'x' }), 400, 'bad_request', 'Last-Event-ID');
  assertErrorShape(await t.request({ path: '/v1/events' }), 401, 'unauthorized');
  assertErrorShape(await t.request({ path: '/v1/events?after=abc' }), 401, 'unauthorized', 'the key first');
  const post = await t.request({ method: 'POST', path: '/v1/events', headers: { Authorization: `Bearer ${t.key}` } });
  assertErrorShape(post, 405, 'method_not_allowed');
  assertErrorShape(await t.get('/v1/events/'), 404, 'not_found');
});

test('a stream sends what was missed, then new events within 100 ms of their commit here', async ({ t }) => {
  await seed(t, 3, 6);
  const table = await t.events();
  const s = await stream(t, '?after=2');
  assert.is(s.status, 200);
  assert.match(String(s.headers['content-type']), /^text\/event-stream/);
  assert.is(s.headers['cache-control'], 'no-store');
  assert.is(s.headers['x-accel-buffering'], 'no');
  await s.waitFor(table.length - 2);
  assert.equal(
    seqsOf(s),
    table.slice(2).map((e) => e.seq),
  );
  const first = parseEvent(s.messages[0]!.data);
  assert.is(s.messages[0]!.event, first.type);
  assert.is(s.messages[0]!.id, first.seq);
  for (let i = 0; i < 5; i++) {
    const sent = performance.now();
    assert.is((await t.patch(1, { quantity: 100 + i })).status, 200);
    await s.waitFor(table.length - 2 + i + 1, 2000);
    const delay = s.messages[s.messages.length - 1]!.at - sent;
    assert.ok(delay < 100, `live within 100 ms of the commit (took ${delay.toFixed(1)} ms, the PATCH's answer included)`);
    assert.is(parseEvent(s.messages[s.messages.length - 1]!.data).data.quantity, 100 + i);
  }
  const events = s.messages.map((m) => parseEvent(m.data));
  assertChain(events, parseEvents((await t.get('/v1/events?limit=2')).text)[1]!.hash);
  s.close();
});

test('Last-Event-ID resumes after it, and wins over after', async ({ t }) => {
  await seed(t, 2, 4);
  const table = await t.events();
  const s = await stream(t, '?after=0', { 'Last-Event-ID': String(table[3]!.seq) });
  await s.waitFor(table.length - 4);
  await sleep(200);
  assert.equal(
    seqsOf(s),
    table.slice(4).map((e) => e.seq),
  );
  s.close();
});

test('an event committed while the catch-up query runs is sent once, nothing lost', async ({ t }) => {
  await seed(t, 2, 2);
  const store = t.store as InventoryStore & { eventsAfter: InventoryStore['eventsAfter'] };
  const read = store.eventsAfter.bind(store);
  let raced = 0;
  // Each of the first catch-up reads: another process commits right after the query ran,
  // before its page is sent; then one more commit while the stream is live.
  store.eventsAfter = async (after, limit) => {
    const rows = await read(after, limit);
    if (raced < 3) {
      raced++;
      await t.track(1000 + raced, raced);
    }
    return rows;
  };
  const s = await stream(t);
  await sleep(300);
  await t.track(2000);
  const table = await t.events();
  await s.waitFor(table.length, 3000);
  await sleep(300);
  assertExactlyOnce(
    seqsOf(s),
    table.map((e) => e.seq),
    'raced catch-up',
  );
  s.close();
});

test('a stream that reconnects three times during 2,000 writes from four clients sees every event once', async ({ t }) => {
  await trackPets(
    t.store,
    [1, 2, 3, 4].map((petId) => ({ petId })),
  );
  let s = await stream(t);
  const seen: bigint[] = [];
  let writing = true;
  const writers = [1, 2, 3, 4].map(async (pet) => {
    for (let i = 0; i < 500; i++) assert.is((await t.patch(pet, { quantity: i })).status, 200);
  });
  const done = Promise.all(writers).then(() => (writing = false));
  for (let reconnect = 0; reconnect < 3; reconnect++) {
    // Cut at a moment while the writers run; the next stream resumes from the last id.
    await sleep(150 + reconnect * 100);
    assert.ok(writing, 'the reconnect happens during the writes');
    s.close();
    seen.push(...seqsOf(s));
    s = await stream(t, '', { 'Last-Event-ID': String(seen[seen.length - 1] ?? 0n) });
  }
  await done;
  const table = (await t.events()).map((e) => e.seq);
  await s.waitFor(table.length - seen.length, 10_000);
  await sleep(200);
  seen.push(...seqsOf(s));
  s.close();
  assert.is(table.length, 2004);
  assertExactlyOnce(seen, table, 'three reconnects');
});

test('another process or instance: its commits arrive within 1 s, also after the notification connection was terminated', async ({ t }) => {
  await seed(t, 2, 0);
  // B: the feed of a second instance, with its own connections to the same database.
  const other = await t.target.open(t.db);
  const app = buildApp({ store: other, logger: createLogger('silent') });
  const server: Server = createHttpServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const port = (server.address() as AddressInfo).port;
    const s = await openStream(port, '/v1/events', { Authorization: `Bearer ${t.key}` });
    const count = (await t.events()).length;
    await s.waitFor(count);
    const delays: number[] = [];
    const writeAndWait = async (i: number) => {
      const sent = performance.now();
      assert.is((await t.patch(1, { quantity: i })).status, 200);
      await s.waitFor(count + i + 1, 3000);
      delays.push(s.messages[s.messages.length - 1]!.at - sent);
    };
    for (let i = 0; i < 5; i++) await writeAndWait(i);
    if (t.target.name === 'postgres') {
      // Every listening connection is cut; B notices, and its feed falls back to reading.
      const { default: pg } = await import('pg');
      const admin = new pg.Client({ connectionString: t.db });
      await admin.connect();
      const { rowCount } = await admin.query(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'petstore-inventory listener' AND datname = current_database()",
      );
      await admin.end();
      assert.ok((rowCount ?? 0) >= 1, 'a listener was terminated');
      for (let i = 5; i < 10; i++) await writeAndWait(i);
    }
    for (const delay of delays) assert.ok(delay < 1000, `within 1 s (${delays.map((d) => d.toFixed(0)).join(', ')} ms)`);
    assertExactlyOnce(
      seqsOf(s),
      (await t.events()).map((e) => e.seq),
      'from another instance',
    );
    s.close();
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await other.close();
  }
});

test('a stream opened during a rebuild and a long read (a backup) follows the writes', async ({ target }) => {
  const { startApp } = await import('./kit/app.ts');
  // Writes off the event loop, as the service runs: the rebuild's swap waits in the writer.
  const t = await startApp({ target, writer: 'thread' });
  const reader = await target.open(t.db, { readonly: true });
  try {
    await trackPets(
      t.store,
      [...Array(3000).keys()].map((i) => ({ petId: i + 1 })),
    );
    let streams: SseStream[] = [];
    const table0 = (await t.events()).length;
    // Another process holds one snapshot open (a backup's copy, a rebuild check's read)
    // while a rebuild runs, streams open and writes go on.
    await reader.snapshot(async () => {
      const rebuild = rebuildProjection(t.store, { check: false });
      streams = [await stream(t), await stream(t, `?after=${table0 - 10}`)];
      for (let i = 0; i < 20; i++) assert.is((await t.patch(1 + i, { quantity: 7 })).status, 200);
      await rebuild;
    });
    const table = (await t.events()).map((e) => e.seq);
    await streams[0]!.waitFor(table.length, 10_000);
    await streams[1]!.waitFor(30, 10_000);
    await sleep(200);
    assertExactlyOnce(seqsOf(streams[0]!), table, 'from 0');
    assertExactlyOnce(seqsOf(streams[1]!), table.slice(table0 - 10), 'from near the end');
    for (const s of streams) s.close();
  } finally {
    await reader.close();
    await t.close();
  }
});

test('a revoked key: its streams end within 1 s; other keys keep theirs', async ({ t }) => {
  await seed(t, 1, 1);
  const other = await t.keys.create('other', 'test');
  const revoked = await stream(t);
  const kept = await stream(t, '', {}, other);
  await revoked.waitFor(3);
  const started = performance.now();
  assert.is(await t.keys.revoke('tester', 'test'), 'revoked');
  await Promise.race([revoked.ended, sleep(1500)]);
  assert.ok(revoked.isEnded(), 'ended');
  assert.ok(performance.now() - started < 1000 + 100, 'within 1 s');
  await sleep(300);
  assert.not.ok(kept.isEnded(), 'the other key keeps its stream');
  kept.close();
});

test('the streams an instance holds are bounded: one more is 503 unavailable with Retry-After', async ({ t }) => {
  const full = await (async () => {
    const { startApp } = await import('./kit/app.ts');
    return startApp({ target: t.target, feed: { maxStreams: 2 } });
  })();
  try {
    const open = [await stream(full), await stream(full)];
    const refused = await full.get('/v1/events', { Accept: 'text/event-stream' });
    assertErrorShape(refused, 503, 'unavailable');
    assert.ok(Number(refused.headers['retry-after']) > 0, 'Retry-After');
    assert.is((await full.get('/v1/events')).status, 200, 'pages are not streams');
    open[0]!.close();
    await sleep(100);
    const again = await stream(full);
    assert.is(again.status, 200, 'a closed stream frees its place');
    for (const s of [open[1]!, again]) s.close();
  } finally {
    await full.close();
  }
});

test('a reader that reads nothing is bounded and cut off; it can resume', async ({ t }) => {
  const { startApp } = await import('./kit/app.ts');
  const slow = await startApp({ target: t.target, feed: { maxBehindBytes: 256 * 1024, maxBehindMs: 1000 } });
  try {
    // ~13 MB of events: more than the kernel's buffers on both sides take.
    await trackPets(
      slow.store,
      [...Array(40_000).keys()].map((i) => ({ petId: i + 1 })),
    );
    const socket = connect(slow.port, '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write(`GET /v1/events HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\nAuthorization: Bearer ${slow.key}\r\n\r\n`);
    socket.pause();
    await sleep(200);
    assert.is(slow.feed.size(), 1, 'the stream is open');
    const started = performance.now();
    while (slow.feed.size() > 0 && performance.now() - started < 8000) await sleep(50);
    assert.is(slow.feed.size(), 0, 'cut off');
    socket.destroy();
    const s = await stream(slow, '?after=39990');
    await s.waitFor(10);
    s.close();
  } finally {
    await slow.close();
  }
});

test('shutdown sends every stream what was committed, then ends it; no new stream opens', async ({ t }) => {
  await seed(t, 2, 2);
  const s = await stream(t);
  await s.waitFor(5);
  for (let i = 0; i < 3; i++) await t.track(50 + i);
  const table = (await t.events()).map((e) => e.seq);
  await t.feed.close();
  await s.ended;
  assertExactlyOnce(seqsOf(s), table, 'before it ended');
  assertErrorShape(await t.get('/v1/events', { Accept: 'text/event-stream' }), 503, 'unavailable');
});

test('idle streams get a heartbeat and are not taken for stalled connections', async ({ target }) => {
  const { startApp } = await import('./kit/app.ts');
  const { DEFAULT_LIMITS } = await import('../src/http/node-server.ts');
  const t = await startApp({
    target,
    feed: { heartbeatMs: 200 },
    limits: { ...DEFAULT_LIMITS, stallTimeoutMs: 300, checkIntervalMs: 100 },
    corsOrigins: ['https://shop.example'],
  });
  try {
    const s = await stream(t, '', { Origin: 'https://shop.example' });
    assert.is(s.headers['access-control-allow-origin'], 'https://shop.example');
    await sleep(1200);
    assert.ok(s.comments >= 3, `heartbeats (${s.comments})`);
    assert.not.ok(s.isEnded(), 'still open');
    await t.track(1);
    await s.waitFor(1, 2000);
    s.close();
  } finally {
    await t.close();
  }
});

test('/metrics counts open streams and events sent, naming no consumer', async ({ t }) => {
  await seed(t, 1, 2);
  const { makeMetrics } = await import('../src/metrics.ts');
  const metrics = makeMetrics({ store: t.store });
  const feed = makeFeed({ store: t.store, logger: createLogger('silent'), registry: metrics.registry });
  const app = buildApp({ store: t.store, logger: createLogger('silent'), metrics, feed });
  const server: Server = createHttpServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const port = (server.address() as AddressInfo).port;
    const s = await openStream(port, '/v1/events', { Authorization: `Bearer ${t.key}` });
    await s.waitFor(4);
    const { send } = await import('./kit/http.ts');
    const text = (await send(port, { path: '/metrics' })).text;
    assert.match(text, /^inventory_feed_streams 1$/m);
    assert.match(text, /^inventory_feed_events_sent_total 4$/m);
    assert.not.ok(text.includes('tester'), 'no key name');
    s.close();
    await feed.close();
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

test.run();
