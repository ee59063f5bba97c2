// test-run: serial (a fault test: its kills and timings want the whole machine)
// Crash: the service is killed with SIGKILL, again and again, in the middle of a write
// load. Every PATCH that got a 200 must survive in the log, in the order the clients saw
// them, with the versions they were told; the file must stay intact, the hash chain
// whole and the projection equal to the replay. Run with `npm run test:crash`;
// FAULT_SEED repeats a run's choices, CRASH_ROUNDS changes the number of rounds.
import { Agent } from 'node:http';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { storeTargets, type FreshDatabase, type StoreTarget } from '../kit/stores.ts';
import { killAll, startService, withTimeout, WAIT_MS, type Service } from '../kit/service.ts';
import {
  assertNoSecrets,
  checkFile,
  checkLog,
  httpSend,
  patch,
  prng,
  readLogOf,
  replay,
  seedDatabase,
  seedFromEnv,
  sleep,
  type Write,
} from './load.ts';

const PETS = 50;
const LOOPS = 24;
const ROUNDS = Number(process.env.CRASH_ROUNDS ?? 24);
const MIN_DELAY_MS = 100;
const MAX_DELAY_MS = 700;

const crash = suite<{ fresh: FreshDatabase }>('crash: SIGKILL under write load');
crash.after.each(async (ctx) => {
  await killAll();
  await ctx.fresh.cleanup();
});

for (const target of storeTargets()) {
  crash(`[${target.name}] ${ROUNDS} rounds of load and SIGKILL: every acknowledged write survives, in order`, async (ctx) => {
    ctx.fresh = await target.fresh();
    await crashRounds(target, ctx.fresh.db);
  });
}

/** On SQLite the file the kills left is checked too (integrity_check); on PostgreSQL the server lives on and only the instance dies. */
async function crashRounds(target: StoreTarget, path: string): Promise<void> {
  const started = Date.now();
  const seed = seedFromEnv();
  const random = prng(seed);
  const [key] = (await seedDatabase(path, PETS, ['crash-load'], target)) as [string];

  const writes: Write[] = [];
  const services: Service[] = [];
  let crashes = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const service = await startService({ db: path, expectKey: false });
    services.push(service);
    let killed = false;
    const loop = async (l: number) => {
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      try {
        for (let i = 0; !killed; i++) {
          const w: Write = {
            requestId: `crash-r${round}-l${l}-${i}`,
            pet: 1 + Math.floor(random() * PETS),
            quantity: Math.floor(random() * 1_000_000),
            via: `round ${round}`,
            sentAt: 0,
          };
          writes.push(w);
          await patch(agent, service.port, key, w);
          // A connection error before the kill, or any status but 200, is a failure.
          if (w.status === undefined && !killed) throw new Error(`round ${round}: ${w.requestId} failed before the kill: ${w.error}`);
        }
      } finally {
        agent.destroy();
      }
    };
    const loops = Promise.all(Array.from({ length: LOOPS }, (_, l) => loop(l)));
    // A failing loop must not hide behind the sleep: it ends the round at once.
    const failed = loops.then(() => undefined);
    await Promise.race([sleep(MIN_DELAY_MS + Math.floor(random() * (MAX_DELAY_MS - MIN_DELAY_MS))), failed]);
    killed = true;
    service.kill('SIGKILL');
    const exit = await withTimeout(service.exited, WAIT_MS, `round ${round}: the service to die after SIGKILL`);
    assert.is(exit.signal, 'SIGKILL', `round ${round}: the service died of the SIGKILL, not before`);
    await withTimeout(loops, WAIT_MS, `round ${round}: the client loops to end`);
    crashes++;
  }

  const acked = writes.filter((w) => w.status === 200);
  const failedInFlight = writes.filter((w) => w.status === undefined);
  const otherStatus = writes.filter((w) => w.status !== undefined && w.status !== 200);
  assert.equal(
    otherStatus.slice(0, 5).map((w) => `${w.requestId}: ${w.status} ${w.body}`),
    [],
    `${otherStatus.length} PATCHes got neither a 200 nor a connection error`,
  );
  assert.ok(acked.length > ROUNDS * 10, `too little load to mean anything: ${acked.length} writes acknowledged`);

  // The log, read-only, as the crashes left it (recovered from the WAL on open).
  const { events, inventory } = await readLogOf(path);
  const { problems, found, committedUnanswered } = checkLog(events, writes, { pets: PETS, actorOf: () => 'crash-load' });
  assert.equal(problems.slice(0, 20), [], `${problems.length} problems in the log`);
  assert.is(found, acked.length, 'every acknowledged write is in events');
  assert.is(
    events.length,
    PETS + found + committedUnanswered,
    'the log holds the seed, the acknowledged writes and some unanswered ones, nothing else',
  );
  const replayed = replay(events);
  assert.equal(
    inventory,
    [...replayed].sort(([a], [b]) => a - b).map(([pet_id, s]) => ({ pet_id, quantity: s.quantity, status: s.status, version: s.version })),
    'the inventory table equals the replay of the log',
  );

  checkFile(path);

  // One more start: it answers, and serves exactly the replay.
  const last = await startService({ db: path, expectKey: false });
  services.push(last);
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const ready = await httpSend(agent, last.port, { path: '/readyz' });
    assert.is(ready.status, 200, `/readyz: ${ready.text}`);
    const list = await httpSend(agent, last.port, { path: '/v1/inventory', headers: { Authorization: `Bearer ${key}` } });
    assert.is(list.status, 200, list.text);
    assert.equal(
      JSON.parse(list.text),
      [...replayed].sort(([a], [b]) => a - b).map(([petId, s]) => ({ petId, quantity: s.quantity, status: s.status })),
      'GET /v1/inventory after the crashes equals the replay',
    );
    // It writes on from where the log ends.
    const next: Write = { requestId: 'crash-after', pet: 1, quantity: 4242, via: 'last', sentAt: 0 };
    await patch(agent, last.port, key, next);
    assert.is(next.status, 200, next.body);
    assert.is(next.version, replayed.get(1)!.version + 1, 'the first write after the crashes gets the next version');
  } finally {
    agent.destroy();
  }
  const stopped = await last.stop();
  assert.is(stopped.code, 0, 'the last service stops cleanly');

  assertNoSecrets(
    services.flatMap((s, i) => [
      { name: `service ${i} stdout`, text: s.out() },
      { name: `service ${i} stderr`, text: s.err() },
    ]),
    [key],
  );
  for (const [i, s] of services.entries()) {
    assert.not.match(s.err(), /had no API key/, `service ${i} made a bootstrap key on a database that has one`);
  }

  console.log(
    `crash [${target.name}]: seed ${seed}; ${ROUNDS} rounds, ${crashes} crashes survived; ${writes.length} PATCHes sent, ` +
      `${acked.length} acknowledged, ${found} found in events; ${failedInFlight.length} failed in flight ` +
      `(${committedUnanswered} of them committed nonetheless); ${events.length} events; ${((Date.now() - started) / 1000).toFixed(1)} s`,
  );
}

crash.run();
