// The change feed's stream at its edges, on every store: during a rebuild or a backup, a
// revoked key, the bound on streams, on a reader that reads nothing and on a stream's
// lifetime, shutdown, the heartbeat and /metrics.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import * as assert from 'uvu/assert';
import { buildApp } from '../../src/app.ts';
import { makeFeed } from '../../src/http/routes/feed-hub.ts';
import { createHttpServer } from '../../src/http/server/node-server.ts';
import { createLogger } from '../../src/support/logger.ts';
import { rebuildProjection } from '../../src/application/verify/rebuild.ts';
import { trackPets } from '../kit/fixtures.ts';
import { assertErrorShape } from '../kit/http.ts';
import { openStream, type SseStream } from '../kit/sse.ts';
import { sleep, seed, stream, seqsOf, assertExactlyOnce } from '../kit/feed.ts';
import { appSuite } from '../kit/suites.ts';

const test = appSuite("the change feed: the stream's bounds and ends");

test('a stream opened during a rebuild and a long read (a backup) follows the writes', async ({ target }) => {
  const { startApp } = await import('../kit/app.ts');
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
  assert.is(await t.keys.revoke('tester', 'test'), 'revoked');
  // From the revocation's commit on (it came before revoke returned): a stream still
  // open 1 s later breaks the bound, however long the revocation itself took.
  const revokedAt = performance.now();
  await Promise.race([revoked.ended, sleep(1500)]);
  assert.ok(revoked.isEnded(), 'ended');
  const endedAfter = performance.now() - revokedAt;
  assert.ok(endedAfter < 1000 + 100, `within 1 s (ended ${endedAfter.toFixed(0)} ms after the revocation)`);
  await sleep(300);
  assert.not.ok(kept.isEnded(), 'the other key keeps its stream');
  kept.close();
});

test('the streams an instance holds are bounded: one more is 503 unavailable with Retry-After', async ({ t }) => {
  const full = await (async () => {
    const { startApp } = await import('../kit/app.ts');
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
  const { startApp } = await import('../kit/app.ts');
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

test('a stream ends at its lifetime with a retry hint; resumed from its last id, it misses nothing', async ({ target }) => {
  const { startApp } = await import('../kit/app.ts');
  const lifetimeMs = 800;
  const t = await startApp({ target, feed: { maxLifetimeMs: lifetimeMs } });
  try {
    await seed(t, 2, 3);
    const opened = performance.now();
    const first = await stream(t);
    await first.waitFor(6);
    await Promise.race([first.ended, sleep(lifetimeMs + 5000)]);
    assert.ok(first.isEnded(), 'ended by the service');
    assert.ok(performance.now() - opened >= lifetimeMs * 0.9 - 50, 'not before its lifetime (less a tenth)');
    assert.equal(
      first.retries.map((r) => r.value),
      ['1000', '1000'],
      'the opening hint, and one at the end',
    );
    assert.is(first.retries[1]!.after, first.messages.length, 'the hint comes after every event sent');
    assert.is(t.feed.size(), 0, 'its place is free');
    for (let i = 0; i < 3; i++) assert.is((await t.patch(1, { quantity: 40 + i })).status, 200);
    const table = (await t.events()).map((e) => e.seq);
    const again = await stream(t, '', { 'Last-Event-ID': first.messages.at(-1)!.id });
    await again.waitFor(3);
    await sleep(200);
    assertExactlyOnce([...seqsOf(first), ...seqsOf(again)], table, 'across the end');
    again.close();
  } finally {
    await t.close();
  }
});

test('a reader that stops reading on a quiet log gives its place back within the lifetime', async ({ target }) => {
  const { startApp } = await import('../kit/app.ts');
  const lifetimeMs = 1000;
  const t = await startApp({ target, feed: { maxStreams: 1, maxLifetimeMs: lifetimeMs, heartbeatMs: 100 } });
  const socket = connect(t.port, '127.0.0.1');
  const connected = new Promise((resolve) => socket.once('connect', resolve));
  try {
    await seed(t, 1, 1);
    await connected;
    socket.write(`GET /v1/events HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\nAuthorization: Bearer ${t.key}\r\n\r\n`);
    socket.pause();
    await sleep(200);
    assert.is(t.feed.size(), 1, 'the stream is open');
    assertErrorShape(await t.get('/v1/events', { Accept: 'text/event-stream' }), 503, 'unavailable');
    // Heartbeats are all it is sent: the kernel's buffers take them, nothing waits here.
    const started = performance.now();
    while (t.feed.size() > 0 && performance.now() - started < lifetimeMs + 5000) await sleep(50);
    assert.is(t.feed.size(), 0, 'its place is free');
    const next = await stream(t);
    assert.is(next.status, 200, 'another reader gets in');
    next.close();
    // What the stalled reader finds when it reads again: its events, then the hint to reconnect.
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (text += chunk));
    const closed = new Promise((resolve) => socket.once('close', resolve));
    socket.resume();
    await Promise.race([closed, sleep(15_000)]);
    assert.ok(socket.destroyed || socket.readableEnded, 'the connection was closed');
    assert.is(text.split('retry: 1000').length - 1, 2, 'the opening hint, and one at the end');
    assert.ok(text.lastIndexOf('retry: 1000') > text.lastIndexOf('data: '), 'the hint after the events');
  } finally {
    socket.destroy();
    await t.close();
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
  const { startApp } = await import('../kit/app.ts');
  const { DEFAULT_LIMITS } = await import('../../src/http/server/node-server.ts');
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
  const { makeMetrics } = await import('../../src/application/health/metrics.ts');
  const metrics = makeMetrics({ store: t.store });
  const feed = makeFeed({ store: t.store, logger: createLogger('silent'), registry: metrics.registry });
  const app = buildApp({ store: t.store, logger: createLogger('silent'), metrics, feed });
  const server: Server = createHttpServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const port = (server.address() as AddressInfo).port;
    const s = await openStream(port, '/v1/events', { Authorization: `Bearer ${t.key}` });
    await s.waitFor(4);
    const { send } = await import('../kit/http.ts');
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
