// test-run: serial (a fault test: its kills and timings want the whole machine)
// PostgreSQL itself stopped and started again under write load, on a server of this
// test's own (so that the outage touches no other test). While it is down, every PATCH
// and every keyed GET is answered 503 `unavailable` in the Error shape within a bounded
// time, never left hanging, and /readyz says 503; once it is back, the same service
// process answers 200 again without a restart, and every acknowledged write is in the log.
import { Agent } from 'node:http';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { createDatabase, startPostgres, type EmbeddedServer } from '../../scripts/embedded-postgres.ts';
import { killAll, startService, withTimeout, WAIT_MS } from '../kit/service.ts';
import { checkFile, checkLog, httpSend, patch, readLogOf, seedDatabase, sleep, type Write } from './load.ts';
import { postgresTarget } from '../kit/postgres-target.ts';

const PETS = 20;
const LOOPS = 8;
const DOWN_MS = 4_000;
/** What "never hangs" means here: the lock wait (5 s) bounds a write, the connect timeout (5 s) a new connection. */
const BOUND_MS = 7_000;

const restart = suite<{ server?: EmbeddedServer }>('PostgreSQL stopped and started again under load');
restart.after(async (ctx) => {
  await killAll();
  await ctx.server?.stop();
});

restart('writes answer 503 while it is down, 200 again after, from the same process; nothing acknowledged is lost', async (ctx) => {
  ctx.server = await startPostgres('postgres-restart');
  const url = await createDatabase(ctx.server.url, 'restart');
  const [key] = (await seedDatabase(url, PETS, ['restart-load'], postgresTarget())) as [string];
  const service = await startService({ db: url, expectKey: false });

  const writes: Write[] = [];
  const gets: { at: number; status: number | undefined; ms: number; code?: string }[] = [];
  let phase: 'up' | 'down' | 'back' = 'up';
  let stopLoad = false;
  const loop = async (l: number) => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      for (let i = 0; !stopLoad; i++) {
        const w: Write = { requestId: `restart-l${l}-${i}`, pet: 1 + ((l * 7 + i) % PETS), quantity: i, via: phase, sentAt: 0 };
        writes.push(w);
        await patch(agent, service.port, key, w);
        if (w.status === undefined) throw new Error(`${w.requestId} (${phase}): no answer: ${w.error}`);
        if (w.status !== 200) await sleep(50);
      }
    } finally {
      agent.destroy();
    }
  };
  const reader = async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      while (!stopLoad) {
        const started = performance.now();
        const res = await httpSend(agent, service.port, { path: '/v1/inventory', headers: { Authorization: `Bearer ${key}` } });
        const code = res.status === 200 ? undefined : (JSON.parse(res.text) as { code: string }).code;
        gets.push({ at: Date.now(), status: res.status, ms: performance.now() - started, code });
        await sleep(50);
      }
    } finally {
      agent.destroy();
    }
  };
  const load = Promise.all([...Array.from({ length: LOOPS }, (_, l) => loop(l)), reader()]).catch((error: Error) => {
    throw new Error(`${error.message}; the service said:\n${service.err().slice(-2000)}\n${service.out().slice(-2000)}`);
  });
  const failed = load.then(() => undefined);

  await Promise.race([sleep(1_000), failed]);
  const downAt = Date.now();
  phase = 'down';
  await ctx.server.pause();
  await Promise.race([sleep(DOWN_MS), failed]);
  const ready = await httpSend(new Agent(), service.port, { path: '/readyz' }, BOUND_MS);
  assert.is(ready.status, 503, `/readyz while the database is down: ${ready.text}`);
  phase = 'back';
  const backAt = Date.now();
  await ctx.server.start();
  // The same process recovers by itself: a write succeeds again within 15 s.
  const recovered = await withTimeout(
    (async () => {
      for (;;) {
        const w = writes.filter((x) => x.via === 'back' && x.status === 200);
        if (w.length > 0) return Date.now();
        await sleep(20);
      }
    })(),
    15_000,
    'a write to succeed after the database is back',
  );
  await sleep(500);
  stopLoad = true;
  await withTimeout(load, WAIT_MS, 'the load to end');

  const downWrites = writes.filter((w) => w.via === 'down');
  const refused = writes.filter((w) => w.status !== 200);
  assert.ok(downWrites.length > 0, 'writes were sent while the database was down');
  // A write whose COMMIT was on its way when the server stopped cannot be known to have
  // committed or not: the contract answers it 503 commit_unconfirmed. Only a write sent
  // before the outage can be one (at most one per loop); every other refusal is unavailable.
  const unconfirmed = refused.filter((w) => w.status === 503 && /"code":"commit_unconfirmed"/.test(w.body ?? ''));
  assert.ok(
    unconfirmed.every((w) => w.via === 'up') && unconfirmed.length <= LOOPS,
    `commit_unconfirmed only for writes in flight when the server stopped: ${unconfirmed.map((w) => `${w.requestId} (${w.via})`).join(', ')}`,
  );
  assert.equal(
    refused
      .filter((w) => !unconfirmed.includes(w) && (w.status !== 503 || !/"code":"unavailable"/.test(w.body ?? '')))
      .map((w) => `${w.requestId}: ${w.status} ${w.body}`),
    [],
    'every other write that was not acknowledged got 503 unavailable',
  );
  const slowest = Math.max(...refused.map((w) => w.ms ?? 0), 0);
  assert.ok(slowest < BOUND_MS, `a refused write waited ${slowest.toFixed(0)} ms`);
  const downGets = gets.filter((g) => g.at > downAt + 500 && g.at < backAt);
  assert.ok(downGets.length > 0, 'GETs were answered while the database was down');
  assert.ok(
    downGets.every((g) => g.status === 503 && g.code === 'unavailable'),
    `keyed GETs while down: ${JSON.stringify(downGets.slice(0, 3))}`,
  );
  const slowestGet = Math.max(...gets.filter((g) => g.status !== 200).map((g) => g.ms), 0);
  assert.ok(slowestGet < BOUND_MS, `a refused GET waited ${slowestGet.toFixed(0)} ms`);

  const { events } = await readLogOf(url);
  const { problems, found } = checkLog(events, writes, { pets: PETS, actorOf: () => 'restart-load' });
  assert.equal(problems.slice(0, 20), [], `${problems.length} problems in the log`);
  const acked = writes.filter((w) => w.status === 200);
  assert.is(found, acked.length, 'every acknowledged write is in events');
  checkFile(url);
  const stopped = await service.stop();
  assert.is(stopped.code, 0);

  console.log(
    `postgres restart: down ${DOWN_MS} ms; ${writes.length} PATCHes, ${acked.length} acknowledged (all found), ` +
      `${refused.length} answered 503 (slowest ${slowest.toFixed(0)} ms), ${downGets.length} keyed GETs while down all 503 ` +
      `(slowest ${slowestGet.toFixed(0)} ms); first write acknowledged ${recovered - backAt} ms after the restart began`,
  );
});

restart.run();
