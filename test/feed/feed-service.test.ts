// The change feed in the service process: FEED_MAX_STREAMS, and shutdown, which sends
// each stream what was committed and ends it instead of waiting out the grace period.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { ConfigError, readConfig } from '../../src/config.ts';
import { createKey, eventsOf, trackPets } from '../kit/fixtures.ts';
import { assertErrorShape } from '../kit/http.ts';
import { killAll, startService } from '../kit/service.ts';
import { openStream } from '../kit/sse.ts';
import { targetSuites } from '../kit/suites.ts';

const service = targetSuites<{ db: string; cleanup: () => Promise<void>; key: string }>('the change feed in the service', {
  async beforeEach(ctx) {
    const fresh = await ctx.target.fresh();
    ctx.db = fresh.db;
    ctx.cleanup = fresh.cleanup;
    const store = await ctx.target.open(ctx.db);
    try {
      ctx.key = await createKey(store, 'k');
      await trackPets(
        store,
        [1, 2, 3].map((petId) => ({ petId })),
        'cli:t',
      );
    } finally {
      await store.close();
    }
  },
  async afterEach(ctx) {
    await killAll();
    await ctx.cleanup();
  },
});

service('SIGTERM: streams get every committed event, then end; the service exits 0 at once', async ({ target, db, key }) => {
  const s = await startService({ db, expectKey: false, env: { FEED_MAX_STREAMS: '2' } });
  const auth = { Authorization: `Bearer ${key}` };
  const streams = [await openStream(s.port, '/v1/events', auth), await openStream(s.port, '/v1/events?after=2', auth)];
  const refused = await s.request({ path: '/v1/events', headers: { ...auth, Accept: 'text/event-stream' } });
  assertErrorShape(refused, 503, 'unavailable', 'FEED_MAX_STREAMS=2');
  assert.ok(refused.headers['retry-after'], 'Retry-After');
  for (let i = 0; i < 20; i++) {
    const res = await s.request({
      method: 'PATCH',
      path: `/v1/inventory/${(i % 3) + 1}`,
      headers: { ...auth, 'Content-Type': 'application/json' },
      body: JSON.stringify({ quantity: i }),
    });
    assert.is(res.status, 200);
  }
  // Past its grace period the service exits 1: an exit 0 is the proof that the open
  // streams did not hold the shutdown until then.
  const { code } = await s.stop();
  assert.is(code, 0, s.err());
  await Promise.all(streams.map((x) => x.ended));
  const store = await target.open(db);
  try {
    const table = (await eventsOf(store)).map((e) => `${e.seq}:${e.hash}`);
    assert.equal(
      streams[0]!.messages.map((m) => m.id),
      table,
    );
    assert.equal(
      streams[1]!.messages.map((m) => m.id),
      table.slice(2),
    );
  } finally {
    await store.close();
  }
});

service('the per-key bounds in the service: FEED_MAX_STREAMS_PER_KEY and MAX_REQUESTS_PER_KEY', async ({ db, key }) => {
  const s = await startService({ db, expectKey: false, env: { FEED_MAX_STREAMS_PER_KEY: '1', MAX_REQUESTS_PER_KEY: '2' } });
  const auth = { Authorization: `Bearer ${key}` };
  const open = await openStream(s.port, '/v1/events', auth);
  try {
    const second = await s.request({ path: '/v1/events', headers: { ...auth, Accept: 'text/event-stream' } });
    assertErrorShape(second, 429, 'too_many_requests', 'FEED_MAX_STREAMS_PER_KEY=1');
    assert.is(second.headers['retry-after'], '1');
    // The stream holds one of the key's two places: one more request at a time is served.
    assert.is((await s.request({ path: '/v1/inventory', headers: auth })).status, 200);
  } finally {
    open.close();
  }
});

service.run();

const config = suite('the change feed in the configuration');
config('256 by default; a whole number from 1, anything else refused at start', () => {
  assert.is(readConfig({}).feedMaxStreams, 256);
  assert.is(readConfig({ FEED_MAX_STREAMS: '3' }).feedMaxStreams, 3);
  for (const bad of ['0', '-1', 'x', '1.5', '', ' 4'])
    assert.throws(
      () => readConfig({ FEED_MAX_STREAMS: bad }),
      (e: unknown) => e instanceof ConfigError,
      bad,
    );
});
config('FEED_STREAM_MAX_SECONDS: 300 by default; whole seconds from 1 to 86400, anything else refused at start', () => {
  assert.is(readConfig({}).feedStreamMaxMs, 300_000);
  assert.is(readConfig({ FEED_STREAM_MAX_SECONDS: '2' }).feedStreamMaxMs, 2000);
  assert.is(readConfig({ FEED_STREAM_MAX_SECONDS: '86400' }).feedStreamMaxMs, 86_400_000);
  for (const bad of ['0', '-1', 'x', '1.5', '', ' 4', '86401'])
    assert.throws(
      () => readConfig({ FEED_STREAM_MAX_SECONDS: bad }),
      (e: unknown) => e instanceof ConfigError && e.message.includes('FEED_STREAM_MAX_SECONDS'),
      bad,
    );
});

config('FEED_MAX_STREAMS_PER_KEY (16) and MAX_REQUESTS_PER_KEY (64): whole numbers from 1, anything else refused at start', () => {
  assert.is(readConfig({}).feedMaxStreamsPerKey, 16);
  assert.is(readConfig({}).maxRequestsPerKey, 64);
  assert.is(readConfig({ FEED_MAX_STREAMS_PER_KEY: '3', MAX_REQUESTS_PER_KEY: '5' }).feedMaxStreamsPerKey, 3);
  assert.is(readConfig({ FEED_MAX_STREAMS_PER_KEY: '3', MAX_REQUESTS_PER_KEY: '5' }).maxRequestsPerKey, 5);
  for (const name of ['FEED_MAX_STREAMS_PER_KEY', 'MAX_REQUESTS_PER_KEY'])
    for (const bad of ['0', '-1', 'x', '1.5', '', ' 4', '1000000'])
      assert.throws(
        () => readConfig({ [name]: bad }),
        (e: unknown) => e instanceof ConfigError && e.message.includes(name),
        `${name}=${bad}`,
      );
});

config.run();
