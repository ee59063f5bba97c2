// Many service instances on one PostgreSQL database: one instance's writes are in the
// others' lists within 1.5 s (NOTIFY, or the fallback check when the listening
// connection is gone), a revoked key fails on every instance at its next request,
// instances starting together make exactly one first key, and If-Match writes raced
// through two instances never both succeed for one version.
import pg from 'pg';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { KEYS_FRESH_MS } from '../../src/store/postgres/changes.ts';
import { freshPostgresDatabase, type TestDatabase } from '../kit/postgres-server.ts';
import { runScript } from '../kit/scripts.ts';
import { killAll, startService, type Service } from '../kit/service.ts';
import { FRESH_MS as STORE_FRESH_MS } from '../kit/stores.ts';

const instances = suite<{ database: TestDatabase }>('many instances on one PostgreSQL database');
instances.before.each(async (ctx) => {
  ctx.database = await freshPostgresDatabase();
});
instances.after.each(async (ctx) => {
  await killAll();
  await ctx.database.cleanup();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
// How late a commit may show on another instance (test/kit/stores.ts).
const { postgres: FRESH_MS } = STORE_FRESH_MS;

function patch(service: Service, key: string, petId: number, quantity: number, ifMatch?: string) {
  return service.request({
    method: 'PATCH',
    path: `/v1/inventory/${petId}`,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...(ifMatch ? { 'if-match': ifMatch } : {}) },
    body: JSON.stringify({ quantity }),
  });
}

/** Polls B's list every 5 ms until it shows pet 1 at quantity; returns the delay in ms. */
async function seenWithin(service: Service, key: string, quantity: number, limitMs: number): Promise<number> {
  const started = performance.now();
  while (performance.now() - started < limitMs) {
    const list = await service.get('/v1/inventory', key);
    assert.is(list.status, 200, list.text);
    if (list.text.includes(`{"petId":1,"quantity":${quantity},`)) return performance.now() - started;
    await sleep(5);
  }
  throw new Error(`the other instance did not show quantity ${quantity} within ${limitMs} ms`);
}

async function sql(url: string, text: string): Promise<Record<string, unknown>[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<Record<string, unknown>>(text)).rows;
  } finally {
    await client.end();
  }
}

instances("a write through one instance is in the other's list within 1.5 s, also with the listener gone", async ({ database }) => {
  const a = await startService({ db: database.url, expectKey: true });
  const key = a.bootstrapKey!;
  const b = await startService({ db: database.url, expectKey: false });
  assert.is((await runScript('track', ['1'], { db: database.url })).status, 0);
  await seenWithin(b, key, 0, FRESH_MS);
  const delays: number[] = [];
  for (let q = 1; q <= 5; q++) {
    assert.is((await patch(a, key, 1, q)).status, 200);
    delays.push(await seenWithin(b, key, q, FRESH_MS));
  }
  // The listening connections are ended by the server: the list still follows (read
  // from chain_head), and each instance listens again within seconds.
  const killed = await sql(
    database.url,
    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'petstore-inventory listener' AND datname = current_database()",
  );
  assert.is(killed.length, 2, 'one listener per instance');
  assert.is((await patch(a, key, 1, 42)).status, 200);
  const fallback = await seenWithin(b, key, 42, FRESH_MS);
  const deadline = Date.now() + 5_000;
  let listeners = 0;
  while (Date.now() < deadline && listeners < 2) {
    await sleep(100);
    listeners = (
      await sql(
        database.url,
        "SELECT pid FROM pg_stat_activity WHERE application_name = 'petstore-inventory listener' AND datname = current_database()",
      )
    ).length;
  }
  assert.is(listeners, 2, 'both instances listen again within 5 s');
  assert.is((await patch(a, key, 1, 43)).status, 200);
  delays.push(await seenWithin(b, key, 43, FRESH_MS));
  console.log(
    `  seen by the other instance after ${delays.map((d) => d.toFixed(1)).join(', ')} ms; with the listener gone: ${fallback.toFixed(1)} ms`,
  );
});

interface ReadyStorage {
  pool: { inUse: number; idle: number; waiting: number };
  notifications: { state: string; since: string; lastHeartbeatAt: string | null };
  lastCommitSeenAt: string | null;
  lastCommitSeenAgeSeconds: number | null;
}

async function readiness(service: Service): Promise<ReadyStorage> {
  const ready = await service.get('/readyz');
  assert.is(ready.status, 200, ready.text);
  return ready.json<{ storage: ReadyStorage }>().storage;
}

/** Polls /readyz until the notification connection is in one of states; returns what it showed. */
async function readinessUntil(service: Service, states: string[], limitMs: number): Promise<ReadyStorage> {
  const deadline = Date.now() + limitMs;
  for (;;) {
    const storage = await readiness(service);
    if (states.includes(storage.notifications.state)) return storage;
    if (Date.now() > deadline)
      throw new Error(`/readyz did not show ${states.join(' or ')} within ${limitMs} ms: ${JSON.stringify(storage)}`);
    await sleep(100);
  }
}

const LISTENERS =
  "SELECT pid FROM pg_stat_activity WHERE application_name = 'petstore-inventory listener' AND datname = current_database()";

instances('/readyz shows the pool, the notification connection and the last commit seen', async ({ database }) => {
  const a = await startService({ db: database.url, expectKey: true });
  const key = a.bootstrapKey!;
  const b = await startService({ db: database.url, expectKey: false });
  const started = await readinessUntil(b, ['up'], 3_000);
  assert.equal(Object.keys(started).sort(), ['lastCommitSeenAgeSeconds', 'lastCommitSeenAt', 'notifications', 'pool']);
  assert.equal(Object.keys(started.pool).sort(), ['idle', 'inUse', 'waiting']);
  assert.ok(started.pool.idle >= 1 && started.pool.waiting === 0, JSON.stringify(started.pool));
  assert.ok(Date.parse(started.notifications.since) <= Date.now());
  assert.ok(started.notifications.lastHeartbeatAt !== null, 'heartbeats come back');
  assert.is(started.lastCommitSeenAt, null, 'no commit seen since the start');
  assert.is((await runScript('track', ['1'], { db: database.url })).status, 0);
  await seenWithin(b, key, 0, FRESH_MS);
  const seen = await readiness(b);
  assert.ok(seen.lastCommitSeenAgeSeconds !== null && seen.lastCommitSeenAgeSeconds < 5, JSON.stringify(seen));

  // Ended by the server: down, then up again by itself, with a newer since.
  await sql(database.url, LISTENERS.replace('SELECT pid', 'SELECT pg_terminate_backend(pid)'));
  const down = await readinessUntil(b, ['down'], 2_000);
  assert.ok(Date.parse(down.notifications.since) > Date.parse(started.notifications.since));
  const back = await readinessUntil(b, ['up'], 5_000);
  assert.ok(Date.parse(back.notifications.since) > Date.parse(down.notifications.since));
});

instances(
  'a listener that falls silent (its server process stopped) is noticed: writes still show within seconds',
  async ({ database }) => {
    const a = await startService({ db: database.url, expectKey: true });
    const key = a.bootstrapKey!;
    const b = await startService({ db: database.url, expectKey: false });
    assert.is((await runScript('track', ['1'], { db: database.url })).status, 0);
    await seenWithin(b, key, 0, FRESH_MS);
    await readinessUntil(b, ['up'], 3_000);
    // SIGSTOP: the connection stays open and says nothing, as behind a firewall that drops
    // its packets without a reset. Both instances' listeners, so b's is among them.
    const stopped = (await sql(database.url, LISTENERS)).map((r) => Number(r.pid));
    assert.is(stopped.length, 2, 'one listener per instance');
    try {
      for (const pid of stopped) process.kill(pid, 'SIGSTOP');
      assert.is((await patch(a, key, 1, 7)).status, 200);
      const delay = await seenWithin(b, key, 7, 4_000);
      const silent = await readinessUntil(b, ['overdue', 'down'], 3_000);
      assert.ok(silent.notifications.lastHeartbeatAt !== null);
      // Given up and replaced: b listens again on a new connection and follows at once.
      await readinessUntil(b, ['up'], 10_000);
      assert.is((await patch(a, key, 1, 8)).status, 200);
      const after = await seenWithin(b, key, 8, FRESH_MS);
      console.log(`  with the listener silent: seen after ${delay.toFixed(0)} ms; listening again: ${after.toFixed(1)} ms`);
    } finally {
      for (const pid of stopped) process.kill(pid, 'SIGCONT');
    }
  },
);

instances('a key revoked with scripts/keys fails on every instance within 100 ms', async ({ database }) => {
  const a = await startService({ db: database.url, expectKey: true });
  const b = await startService({ db: database.url, expectKey: false });
  const created = await runScript('keys', ['create', 'till-3'], { db: database.url });
  assert.is(created.status, 0, created.stderr);
  const key = /pinv_[A-Za-z0-9]{32}/.exec(created.stdout + created.stderr)![0];
  assert.is((await a.get('/v1/inventory', key)).status, 200);
  assert.is((await b.get('/v1/inventory', key)).status, 200);
  assert.is((await runScript('keys', ['revoke', 'till-3'], { db: database.url })).status, 0);
  // An instance trusts the keys it holds only while a heartbeat it sent within the last
  // 100 ms has come back on its notification connection, which brings the revocation
  // first: for up to 100 ms after the revocation's commit it may still accept the key
  // (docs/scaling.md). Past that bound, by its own clock, it must refuse it.
  await sleep(KEYS_FRESH_MS + 50);
  assert.is((await a.get('/v1/inventory', key)).status, 401, 'refused by the first instance');
  assert.is((await b.get('/v1/inventory', key)).status, 401, 'and by the second');
});

instances('three instances starting together on an empty database make exactly one first key', async ({ database }) => {
  const migrated = await runScript('migrate', [], { db: database.url });
  assert.is(migrated.status, 0, migrated.stderr);
  const started = await Promise.all([0, 1, 2].map(() => startService({ db: database.url, expectKey: false })));
  assert.is(started.filter((s) => /had no API key/.test(s.err())).length, 1, 'exactly one printed a key');
  const keys = await sql(database.url, 'SELECT name FROM api_keys');
  assert.equal(keys, [{ name: 'bootstrap' }]);
});

instances('If-Match writes raced through two instances: never two 200s for one version, no gap', async ({ database }) => {
  const a = await startService({ db: database.url, expectKey: true });
  const key = a.bootstrapKey!;
  const b = await startService({ db: database.url, expectKey: false });
  const PETS = 5;
  for (let p = 1; p <= PETS; p++) assert.is((await runScript('track', [String(p)], { db: database.url })).status, 0);
  // Each round, 8 racers per instance send a PATCH to every pet with If-Match of the
  // version the round expects: exactly one of the 16 may win it.
  const ROUNDS = 6;
  let won = 0;
  let conflicts = 0;
  for (let round = 1; round <= ROUNDS; round++) {
    const answers = await Promise.all(
      Array.from({ length: PETS }, (_, p) =>
        Promise.all(Array.from({ length: 16 }, (_, racer) => patch(racer % 2 === 0 ? a : b, key, p + 1, racer, `"${round}"`))),
      ),
    );
    for (const [p, perPet] of answers.entries()) {
      const ok = perPet.filter((r) => r.status === 200);
      assert.is(ok.length, 1, `pet ${p + 1}, version ${round}: ${ok.length} PATCHes succeeded`);
      assert.is(ok[0]!.headers.etag, `"${round + 1}"`);
      assert.ok(
        perPet.every((r) => r.status === 200 || r.status === 412),
        perPet.map((r) => r.status).join(' '),
      );
      won += ok.length;
      conflicts += perPet.length - ok.length;
    }
  }
  const gaps = await sql(database.url, `SELECT pet_id FROM events GROUP BY pet_id HAVING max(version) <> count(*) OR min(version) <> 1`);
  assert.equal(gaps, [], 'versions 1..n per pet');
  const events = await sql(database.url, 'SELECT count(*)::int AS n FROM events');
  assert.equal(events, [{ n: PETS + won }], 'one event per 200, nothing else');
  console.log(`  ${won} writes won, ${conflicts} refused with 412`);
});

instances.run();
