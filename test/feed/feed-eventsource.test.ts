// The clients' guide's EventSource consumer (docs/clients.md, "Following the log"), run as
// written with the eventsource package against the service process: onmessage gets every
// event; at FEED_MAX_STREAMS it waits and gets in; across a restart of the service, with
// writes while it is down, it resumes with nothing missed or repeated; and so it does each
// time a stream reaches its lifetime.
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { namedTsBlock } from '../kit/docs.ts';
import { createKey, eventsOf, trackPets } from '../kit/fixtures.ts';
import { readLines, type LineReader } from '../kit/lines.ts';
import { root, tempDir, type TempDir } from '../kit/paths.ts';
import { killAll, startService } from '../kit/service.ts';
import { forwardingPort, type ForwardingPort } from '../kit/ports.ts';
import { openStream } from '../kit/sse.ts';
import { sqliteTarget } from '../kit/sqlite-target.ts';

const BIG = 9223372036854775807n;

const target = sqliteTarget();
const test = suite<{
  db: string;
  cleanup: () => Promise<void>;
  key: string;
  scratch: TempDir;
  follower?: LineReader;
  proxy?: ForwardingPort;
}>("the clients' guide's EventSource consumer");
test.before.each(async (ctx) => {
  const fresh = await target.fresh();
  ctx.db = fresh.db;
  ctx.cleanup = fresh.cleanup;
  const store = await target.open(ctx.db);
  try {
    ctx.key = await createKey(store, 'follower');
    await trackPets(
      store,
      [1, 2, BIG].map((petId) => ({ petId, quantity: 1 })),
      'cli:t',
    );
  } finally {
    await store.close();
  }
  // Inside the repository, so that tsx and eventsource resolve from its node_modules.
  mkdirSync(join(root, '.generated-client'), { recursive: true });
  ctx.scratch = tempDir('eventsource-', join(root, '.generated-client'));
  const guide = readFileSync(join(root, 'docs/clients.md'), 'utf8');
  writeFileSync(ctx.scratch.path('follow-eventsource.ts'), namedTsBlock(guide, 'follow-eventsource.ts'));
});
test.after.each(async (ctx) => {
  ctx.follower?.proc.kill('SIGKILL');
  await ctx.proxy?.close();
  await killAll();
  await ctx.cleanup();
  ctx.scratch.cleanup();
});

test('onmessage gets every event once: after waiting at FEED_MAX_STREAMS, and across a restart', async (ctx) => {
  const env = { FEED_MAX_STREAMS: '1' };
  let service = await startService({ db: ctx.db, expectKey: false, env });
  // The consumer's one URL, kept across the restart: the service gets a new port each time.
  ctx.proxy = await forwardingPort(() => service.port);
  const port = ctx.proxy.port;
  const auth = { Authorization: `Bearer ${ctx.key}` };
  const patch = async (petId: bigint | number, quantity: number) => {
    const res = await service.request({
      method: 'PATCH',
      path: `/v1/inventory/${petId}`,
      headers: { ...auth, 'Content-Type': 'application/json' },
      body: JSON.stringify({ quantity }),
    });
    assert.is(res.status, 200, res.text);
  };

  // The one stream this instance holds is taken: the consumer's EventSource gets a 503.
  const taken = await openStream(port, '/v1/events', auth);
  assert.is(taken.status, 200);
  const follower = readLines(
    spawn(process.execPath, ['--import', 'tsx', 'follow-eventsource.ts'], {
      cwd: ctx.scratch.dir,
      env: { ...process.env, INVENTORY_URL: `http://127.0.0.1:${port}`, INVENTORY_KEY: ctx.key },
    }),
  );
  ctx.follower = follower;
  for (let i = 0; i < 200 && !follower.err().includes('a new EventSource'); i++) await new Promise((r) => setTimeout(r, 50));
  assert.match(follower.err(), 'the feed is full or restarting', 'it was refused and waits');
  assert.equal(follower.lines, []);
  taken.close();
  await follower.waitFor(3, 20_000);

  for (let i = 0; i < 4; i++) await patch(BIG, i);
  await follower.waitFor(7);

  // A restart, with writes while the service is down: the EventSource reconnects by itself.
  const stopped = await service.stop();
  assert.is(stopped.code, 0);
  const store = await target.open(ctx.db);
  try {
    await trackPets(store, [{ petId: 3, quantity: 5 }], 'cli:t');
  } finally {
    await store.close();
  }
  service = await startService({ db: ctx.db, expectKey: false, env });
  await follower.waitFor(8, 20_000);
  for (let i = 0; i < 3; i++) await patch(2, 10 + i);
  await follower.waitFor(11);
  await new Promise((r) => setTimeout(r, 300));
  assert.is(follower.proc.exitCode, null, follower.err());

  const check = await target.open(ctx.db);
  try {
    const expected = (await eventsOf(check)).map((e) => `${e.seq} ${e.type} pet ${e.petId}`);
    assert.is(expected.length, 11);
    assert.equal(follower.lines, expected, 'every event once, in order, ids exact');
  } finally {
    await check.close();
  }
});

test('streams that reach FEED_STREAM_MAX_SECONDS end, and the EventSource resumes each time with nothing missed or repeated', async (ctx) => {
  const service = await startService({ db: ctx.db, expectKey: false, env: { FEED_STREAM_MAX_SECONDS: '1' } });
  const { port } = service;
  const follower = readLines(
    spawn(process.execPath, ['--import', 'tsx', 'follow-eventsource.ts'], {
      cwd: ctx.scratch.dir,
      env: { ...process.env, INVENTORY_URL: `http://127.0.0.1:${port}`, INVENTORY_KEY: ctx.key },
    }),
  );
  ctx.follower = follower;
  await follower.waitFor(3, 20_000);
  // Writes for several lifetimes, so that some land while the consumer reconnects.
  const started = performance.now();
  let written = 0;
  while (performance.now() - started < 4000) {
    const res = await service.request({
      method: 'PATCH',
      path: `/v1/inventory/${BIG}`,
      headers: { Authorization: `Bearer ${ctx.key}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ quantity: written }),
    });
    assert.is(res.status, 200, res.text);
    written++;
    await new Promise((r) => setTimeout(r, 50));
  }
  await follower.waitFor(3 + written, 20_000);
  const metrics = await service.request({ path: '/metrics' });
  const ended = Number(/^inventory_feed_streams_closed_total\{reason="lifetime"\} (\d+)$/m.exec(metrics.text)?.[1]);
  assert.ok(ended >= 2, `streams ended at their lifetime: ${ended}`);
  await new Promise((r) => setTimeout(r, 300));
  assert.is(follower.proc.exitCode, null, follower.err());
  const check = await target.open(ctx.db);
  try {
    const expected = (await eventsOf(check)).map((e) => `${e.seq} ${e.type} pet ${e.petId}`);
    assert.is(expected.length, 3 + written);
    assert.equal(follower.lines, expected, 'every event once, in order');
  } finally {
    await check.close();
  }
});

test.run();
