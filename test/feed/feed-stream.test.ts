// The change feed's Server-Sent Events stream on every store: catch-up then live events,
// resuming with Last-Event-ID, races with commits and reconnects, other processes' commits.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as assert from 'uvu/assert';
import { buildApp } from '../../src/app.ts';
import { createHttpServer } from '../../src/http/server/node-server.ts';
import { createLogger } from '../../src/support/logger.ts';
import type { InventoryStore } from '../../src/store/port.ts';
import { trackPets } from '../kit/fixtures.ts';
import { openStream } from '../kit/sse.ts';
import { sleep, parseEvents, parseEvent, assertChain, seed, stream, seqsOf, assertExactlyOnce, seqsBeforeMarker } from '../kit/feed.ts';
import { appSuite } from '../kit/suites.ts';

const test = appSuite('the change feed: the stream');

test('a stream sends what was missed, then new events as they are committed', async ({ t }) => {
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
  assert.is(s.messages[0]!.event, 'message', 'no event field: an EventSource delivers it to onmessage');
  assert.is(s.messages[0]!.id, `${first.seq}:${first.hash}`, 'the id is the digest');
  // That a commit here reaches the stream at once, not at the next poll, is checked with
  // the poll an hour apart (feed-commit-signal.test.ts); how soon is for scripts/feed-check.ts
  // to measure, not for a test whose machine may be busy.
  for (let i = 0; i < 5; i++) {
    assert.is((await t.patch(1, { quantity: 100 + i })).status, 200);
    await s.waitFor(table.length - 2 + i + 1, 5000);
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
  assert.equal(
    await seqsBeforeMarker(t, s, table.length - 4),
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
  const before = (await t.events()).length;
  const s = await stream(t);
  // Live: the stream sent what was there and the three raced commits.
  await s.waitFor(before + 3, 3000);
  assert.is(raced, 3, 'three commits raced the catch-up');
  await t.track(2000);
  const table = await t.events();
  assertExactlyOnce(
    await seqsBeforeMarker(t, s, table.length, 3000),
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
  seen.push(...(await seqsBeforeMarker(t, s, table.length - seen.length, 10_000)));
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
    // From the PATCH's answer, which came after the commit (as in the first test).
    const writeAndWait = async (i: number) => {
      assert.is((await t.patch(1, { quantity: i })).status, 200);
      const answered = performance.now();
      await s.waitFor(count + i + 1, 3000);
      delays.push(s.messages[s.messages.length - 1]!.at - answered);
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
    // The contract's bound for an event written by another instance.
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

test.run();
