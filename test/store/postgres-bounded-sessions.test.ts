// Every PostgreSQL session of the service bounds itself on the server. An instance frozen
// inside a batch (SIGSTOP; a VM pause and a partition look the same to the server) holds
// the chain head that every instance's writes need: the server ends its idle transaction
// within seconds and the other instances write again. A table locked by an operator
// (LOCK TABLE, VACUUM FULL, REINDEX) makes requests wait at most their budget: each is
// answered 503 within 5 s, nothing written, and served again once the lock is gone.
import pg from 'pg';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { assertErrorShape, type Response } from '../kit/http.ts';
import { startApp, type TestApp } from '../kit/app.ts';
import { freshPostgresDatabase, type TestDatabase } from '../kit/postgres-server.ts';
import { postgresTarget } from '../kit/postgres-target.ts';
import { runScript } from '../kit/scripts.ts';
import { killAll, startService, type Service } from '../kit/service.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The budget a request is answered in, and what a loaded test machine may add to it. */
const BUDGET_MS = 5_000;
const SLACK_MS = 700;

async function connect(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  return client;
}

function patch(service: Service, key: string, quantity: number, requestId?: string) {
  return service.request({
    method: 'PATCH',
    path: '/v1/inventory/1',
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
      ...(requestId ? { 'x-request-id': requestId } : {}),
    },
    body: JSON.stringify({ quantity }),
  });
}

const frozen = suite<{ database: TestDatabase }>('a frozen instance on PostgreSQL');
frozen.before.each(async (ctx) => {
  ctx.database = await freshPostgresDatabase();
});
frozen.after.each(async (ctx) => {
  await killAll();
  await ctx.database.cleanup();
});

frozen('an instance stopped inside a batch releases the chain head within seconds; the other writes again', async ({ database }) => {
  const a = await startService({ db: database.url, expectKey: true });
  const key = a.bootstrapKey!;
  const b = await startService({ db: database.url, expectKey: false });
  assert.is((await runScript('track', ['1'], { db: database.url })).status, 0);
  const watcher = await connect(database.url);
  const acknowledged: string[] = [];
  let stopLoad = false;
  let sent = 0;
  // Eight clients writing through A, each request bounded (the kit's 15 s).
  const load = Array.from({ length: 8 }, async (_, worker) => {
    for (let i = 0; !stopLoad && i < 5_000; i++) {
      const id = `a-${worker}-${i}`;
      sent++;
      const res = await patch(a, key, i % 100, id).catch(() => undefined);
      if (res?.status === 200) acknowledged.push(id);
    }
  });
  try {
    for (let i = 0; i < 500 && acknowledged.length < 100; i++) await sleep(10);
    assert.ok(acknowledged.length >= 100, 'A is under load before it freezes');
    // Stop A until the server shows it inside a transaction (between its statements).
    let caught = false;
    for (let attempt = 0; attempt < 200 && !caught; attempt++) {
      await sleep(5 + (attempt % 7));
      a.proc.kill('SIGSTOP');
      await sleep(30);
      const { rows } = await watcher.query<{ n: string }>(
        `SELECT count(*)::text AS n FROM pg_stat_activity
         WHERE datname = current_database() AND application_name = 'petstore-inventory' AND state = 'idle in transaction'`,
      );
      caught = rows[0]!.n !== '0';
      if (!caught) a.proc.kill('SIGCONT');
    }
    assert.ok(caught, 'A was stopped inside a transaction');
    const frozenAt = performance.now();
    // B writes again once the server has ended A's transaction; at most 20 s are tried.
    let firstWrite: number | undefined;
    const answers: number[] = [];
    while (firstWrite === undefined && performance.now() - frozenAt < 20_000) {
      const started = performance.now();
      const res = await patch(b, key, 7);
      answers.push(res.status);
      assert.ok(performance.now() - started < BUDGET_MS + SLACK_MS, `B answered within its budget (${res.status})`);
      if (res.status === 200) firstWrite = performance.now() - frozenAt;
      else assertErrorShape(res, 503, 'unavailable');
    }
    console.log(`frozen instance: B's first write ${firstWrite?.toFixed(0) ?? 'never'} ms after A froze; B's answers ${answers.join(' ')}`);
    assert.ok(firstWrite !== undefined, 'B wrote while A was still frozen');
    assert.ok(firstWrite < 12_000, `B wrote again within 12 s (${firstWrite.toFixed(0)} ms)`);
  } finally {
    a.proc.kill('SIGCONT');
    stopLoad = true;
  }
  await Promise.all(load);
  await watcher.end();
  // A serves again, and nothing it acknowledged is missing from the log.
  assert.is((await patch(a, key, 3)).status, 200, 'A writes again after it thawed');
  const client = await connect(database.url);
  try {
    const { rows } = await client.query<{ request_id: string }>("SELECT request_id FROM events WHERE request_id LIKE 'a-%'");
    const logged = new Set(rows.map((r) => r.request_id));
    const lost = acknowledged.filter((id) => !logged.has(id));
    assert.equal(lost, [], 'every write A acknowledged is in the log');
    console.log(`frozen instance: ${sent} PATCHes through A, ${acknowledged.length} acknowledged, all in the log`);
  } finally {
    await client.end();
  }
  const verified = await runScript('verify-log', [], { db: database.url });
  assert.is(verified.status, 0, verified.stderr);
});

frozen.run();

// Lock modes that stop every reader and writer of a table, as LOCK TABLE, VACUUM FULL and
// REINDEX take them.
const locked = suite<{ t: TestApp }>('a table locked on PostgreSQL');
locked.before.each(async (ctx) => {
  ctx.t = await startApp({ target: postgresTarget() });
  await ctx.t.track(1, 3);
});
locked.after.each(async (ctx) => {
  await ctx.t.close();
});

/** Holds an ACCESS EXCLUSIVE lock on table while work runs, then releases it. */
async function whileLocked<T>(db: string, table: string, work: () => Promise<T>): Promise<T> {
  const client = await connect(db);
  try {
    await client.query(`BEGIN; LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
    return await work();
  } finally {
    await client.query('ROLLBACK');
    await client.end();
  }
}

async function timed(request: Promise<Response>): Promise<{ res: Response; ms: number }> {
  const started = performance.now();
  const res = await request;
  return { res, ms: performance.now() - started };
}

for (const [table, affected] of [
  ['events', ['PATCH']],
  ['inventory', ['GET', 'PATCH']],
  ['api_keys', ['GET', 'PATCH']],
] as const) {
  locked(`a lock on ${table}: ${affected.join(' and ')} answered 503 within the budget, nothing written`, async ({ t }) => {
    const before = (await t.events()).length;
    // A PATCH of quantity 9 and a GET, at once, while the table is locked.
    const [patched, listed] = await whileLocked(t.db, table, () =>
      Promise.all([timed(t.patch(1, { quantity: 9 })), timed(t.get('/v1/inventory'))]),
    );
    console.log(
      `lock on ${table}: PATCH ${patched.res.status} in ${patched.ms.toFixed(0)} ms, GET ${listed.res.status} in ${listed.ms.toFixed(0)} ms`,
    );
    for (const [method, { res, ms }] of [
      ['PATCH', patched],
      ['GET', listed],
    ] as const) {
      assert.ok(ms < BUDGET_MS + SLACK_MS, `${method} answered in ${ms.toFixed(0)} ms`);
      if ((affected as readonly string[]).includes(method)) {
        assertErrorShape(res, 503, 'unavailable');
        assert.ok(res.headers['retry-after'], `${method}'s 503 says when to retry`);
      } else {
        assert.is(res.status, 200, `${method} does not need ${table}: ${res.text}`);
      }
    }
    assert.is((await t.events()).length, before, 'nothing written while locked');
    // Once the lock is gone, both are served again.
    assert.is((await t.patch(1, { quantity: 4 })).status, 200);
    assert.match((await t.get('/v1/inventory')).text, '"quantity":4');
  });
}

locked.run();
