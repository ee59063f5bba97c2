// Safe retries between service processes: the same Idempotency-Key sent at once through
// two instances on one PostgreSQL database, clients that drop their connections and
// retry, and a service killed after a commit whose answer never reached its client.
// Each intended write is one event, however often it is sent.
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import pg from 'pg';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { CommandResult, Idempotent } from '../../src/application/write/command-result.ts';
import { appliedEntry, makeCommandHandler } from '../../src/application/write/commands.ts';
import type { Response } from '../kit/http.ts';
import { runScript } from '../kit/scripts.ts';
import { killAll, startService, type Service } from '../kit/service.ts';
import { eventsOf, lastSeqOf, type EventRow } from '../kit/fixtures.ts';
import { storeTargets, type FreshDatabase, type StoreTarget } from '../kit/stores.ts';
import { postgresTarget } from '../kit/postgres-target.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function keyedPatch(service: Service, key: string, petId: number, quantity: number, idempotencyKey: string): Promise<Response> {
  return service.request({
    method: 'PATCH',
    path: `/v1/inventory/${petId}`,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': idempotencyKey },
    body: JSON.stringify({ quantity }),
  });
}

/** Sends a keyed PATCH whole and leaves without reading the answer. */
function sendAndLeave(service: Service, key: string, petId: number, quantity: number, idempotencyKey: string): Promise<void> {
  const body = JSON.stringify({ quantity });
  return new Promise((resolve, reject) => {
    const socket = connect(service.port, '127.0.0.1', () => {
      socket.end(
        `PATCH /v1/inventory/${petId} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\n` +
          `Idempotency-Key: ${idempotencyKey}\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
      );
      socket.destroy();
      resolve();
    });
    socket.on('error', reject);
  });
}

/** The QuantitySet events in the log, read from the database as an auditor would. */
async function quantitySets(target: StoreTarget, db: string): Promise<EventRow[]> {
  const store = await target.open(db, { readonly: true });
  try {
    return (await eventsOf(store)).filter((e) => e.type === 'QuantitySet');
  } finally {
    await store.close();
  }
}

const across = suite<{ fresh: FreshDatabase }>('Idempotency-Key across PostgreSQL instances');
across.before.each(async (ctx) => {
  ctx.fresh = await postgresTarget().fresh();
});
across.after.each(async (ctx) => {
  await killAll();
  await ctx.fresh.cleanup();
});

across('50 clients send one key at once through two instances: exactly one event, the rest replays or 409', async ({ fresh }) => {
  const a = await startService({ db: fresh.db, expectKey: true });
  const key = a.bootstrapKey!;
  const b = await startService({ db: fresh.db, expectKey: false });
  assert.is((await runScript('track', ['1'], { db: fresh.db })).status, 0);
  const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => keyedPatch(i % 2 === 0 ? a : b, key, 1, 7, 'one-order')));
  const appended = answers.filter((r) => r.status === 200 && r.headers['idempotent-replayed'] === undefined);
  const replayed = answers.filter((r) => r.status === 200 && r.headers['idempotent-replayed'] === 'true');
  const inFlight = answers.filter((r) => r.status === 409);
  console.log(
    `one key, 50 clients, two instances: ${appended.length} appended, ${replayed.length} replayed, ${inFlight.length} in flight (409)`,
  );
  assert.is(appended.length, 1, 'one 200 that appended');
  assert.is(replayed.length + inFlight.length, 49, answers.map((r) => r.status).join(' '));
  for (const r of replayed) assert.is(r.text, appended[0]!.text);
  assert.is((await quantitySets(postgresTarget(), fresh.db)).length, 1);
});

/** Holds the chain head as a slow batch would: every batch waits for it until release(). */
async function holdChainHead(db: string): Promise<{ client: pg.Client; release: () => Promise<void> }> {
  const client = new pg.Client({ connectionString: db });
  await client.connect();
  await client.query('BEGIN; SELECT seq FROM chain_head FOR UPDATE');
  let released = false;
  return {
    client,
    release: async () => {
      if (released) return;
      released = true;
      await client.query('ROLLBACK');
      await client.end();
    },
  };
}

/** Whether `request` has settled yet: once it has, what a wait expected of it can no longer come. */
function settledFlag(request: Promise<unknown>): () => boolean {
  let settled = false;
  request.then(
    () => (settled = true),
    () => (settled = true),
  );
  return () => settled;
}

/**
 * Waits until some batch holds an Idempotency-Key (an advisory lock is granted), for as
 * long as the request that should take it is still running: a batch that never takes it
 * is caught by the test run's timeout for the file.
 */
async function untilKeyHeld(client: pg.Client, request: Promise<unknown>): Promise<void> {
  const settled = settledFlag(request);
  for (;;) {
    if (settled()) assert.unreachable('the request was done before any batch took the key');
    const { rows } = await client.query<{ n: string }>(`SELECT count(*) AS n FROM pg_locks
       WHERE locktype = 'advisory' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`);
    if (Number(rows[0]!.n) > 0) return;
    await sleep(5);
  }
}

/** Waits until n batches with Idempotency-Keys wait for the held head, while none of `requests` settled. */
async function untilWaiting(client: pg.Client, n: number, requests: Promise<unknown>[]): Promise<void> {
  const settled = requests.map(settledFlag);
  for (;;) {
    if (settled.some((done) => done())) assert.unreachable(`a request was done before ${n} batches waited for the head`);
    // The holder is in a transaction, which would see one snapshot of the activity.
    await client.query('SELECT pg_stat_clear_snapshot()');
    const { rows } = await client.query<{ n: string }>(
      `SELECT count(*) AS n FROM pg_stat_activity
       WHERE datname = current_database() AND state = 'active' AND wait_event_type = 'Lock' AND query LIKE '%pg_try_advisory_xact_lock%'`,
    );
    if (Number(rows[0]!.n) >= n) return;
    await sleep(5);
  }
}

across(
  'a retry through the other instance while the first waits in its batch: 409 at once, then the first succeeds and a retry replays',
  async ({ fresh }) => {
    const a = await startService({ db: fresh.db, expectKey: true });
    const key = a.bootstrapKey!;
    const b = await startService({ db: fresh.db, expectKey: false });
    assert.is((await runScript('track', ['1'], { db: fresh.db })).status, 0);
    const head = await holdChainHead(fresh.db);
    let first: Promise<Response> = Promise.reject(new Error('not sent'));
    first.catch(() => undefined);
    try {
      first = keyedPatch(a, key, 1, 9, 'slow-order');
      const firstAnswered = settledFlag(first);
      await untilKeyHeld(head.client, first);
      const retry = await keyedPatch(b, key, 1, 9, 'slow-order');
      assert.is(retry.status, 409, retry.text);
      assert.is((JSON.parse(retry.text) as { code: string }).code, 'idempotency_key_in_flight');
      assert.is(retry.headers['retry-after'], '1');
      // Not a wait for the first's batch, which waits for the head as long as the test holds it.
      assert.not.ok(firstAnswered(), 'the 409 came while the first still waited');
    } finally {
      await head.release();
    }
    const answer = await first;
    assert.is(answer.status, 200, answer.text);
    assert.is(answer.headers['idempotent-replayed'], undefined);
    const later = await keyedPatch(b, key, 1, 9, 'slow-order');
    assert.is(later.status, 200);
    assert.is(later.headers['idempotent-replayed'], 'true');
    assert.is(later.text, answer.text);
    assert.is((await quantitySets(postgresTarget(), fresh.db)).length, 1);
  },
);

across(
  'a batch of another instance that finds the key held waits for that batch only: 409 if it did not commit, else a replay',
  async ({ fresh }) => {
    const one = await postgresTarget().open(fresh.db);
    const two = await postgresTarget().open(fresh.db);
    const tracked = await runScript('track', ['1'], { db: fresh.db });
    assert.is(tracked.status, 0, tracked.stderr);
    const keyed = (key: string): Idempotent => ({
      scope: { apiKey: 'clerk', key },
      path: '/v1/inventory/1',
      fingerprint: 'same request',
      answers: {
        applied: (entry) => ({ status: 200, etag: `"${entry.version}"`, body: '{}' }),
        refused: () => ({ status: 404, etag: null, body: '{}' }),
      },
    });
    const setTo = (quantity: number) => ({ type: 'SetQuantity' as const, petId: 1n, quantity });
    const here = makeCommandHandler({ store: one, now: Date.now });
    const there = makeCommandHandler({ store: two, now: Date.now });
    const refused = (result: CommandResult) =>
      assert.ok(result.kind === 'refused' && result.refusal.reason === 'idempotency_key_in_flight', result.kind);
    const carriedOut = () => assert.unreachable('carried out');
    let head = await holdChainHead(fresh.db);
    try {
      // The first's batch gives up (its deadline passes while the head is held): the
      // second, which tried the key while that batch held it, is refused and wrote nothing.
      // The deadline leaves the second many times what it took to come and wait behind the
      // first with both cores busy; should it pass before, the wait below says so.
      const gaveUp = here.handle(setTo(3), { actor: 'clerk', requestId: 'first' }, keyed('dropped'), Date.now() + 1500);
      gaveUp.catch(() => undefined);
      await untilKeyHeld(head.client, gaveUp);
      // The lookup sees the key held without taking it.
      assert.is(await two.idempotency.find(keyed('dropped').scope, new Date().toISOString()), 'in_flight');
      const second = there.handle(setTo(3), { actor: 'clerk', requestId: 'second' }, keyed('dropped'));
      second.catch(() => undefined);
      await untilWaiting(head.client, 2, [gaveUp, second]);
      await gaveUp.then(carriedOut, () => undefined);
      await head.release();
      refused(await second);
      assert.is(await lastSeqOf(two), 1);
      // The key went with the batch that held it: free again.
      assert.is(await two.idempotency.find(keyed('dropped').scope, new Date().toISOString()), undefined);
      assert.is((await there.handle(setTo(3), { actor: 'clerk', requestId: 'third' }, keyed('dropped')).then(appliedEntry)).version, 2);

      // The first's batch commits: the second replays its answer.
      head = await holdChainHead(fresh.db);
      const committed = here.handle(setTo(4), { actor: 'clerk', requestId: 'fourth' }, keyed('kept'));
      committed.catch(() => undefined);
      await untilKeyHeld(head.client, committed);
      const retried = there.handle(setTo(4), { actor: 'clerk', requestId: 'fifth' }, keyed('kept'));
      retried.catch(() => undefined);
      await untilWaiting(head.client, 2, [committed, retried]);
      await head.release();
      assert.is(appliedEntry(await committed).version, 3);
      assert.is((await retried).kind, 'replayed', 'the answer the first stored, not carried out again');
      assert.is(await lastSeqOf(two), 3);
    } finally {
      await head.release();
      await one.close();
      await two.close();
    }
  },
);

across('a retry storm through two instances, connections dropped at random: one event per intended write', async ({ fresh }) => {
  const a = await startService({ db: fresh.db, expectKey: true });
  const key = a.bootstrapKey!;
  const b = await startService({ db: fresh.db, expectKey: false });
  const PETS = 5;
  for (let p = 1; p <= PETS; p++) assert.is((await runScript('track', [String(p)], { db: fresh.db })).status, 0);
  const WRITES = 40;
  let dropped = 0;
  let sent = 0;
  const statuses = new Map<number, number>();
  // Each intended write: a key of its own; its client drops the connection at random
  // (the request may or may not have been carried out) and retries through either
  // instance until it gets an answer, as a proxy with proxy_next_upstream would.
  await Promise.all(
    Array.from({ length: WRITES }, async (_, w) => {
      const petId = (w % PETS) + 1;
      for (let attempt = 0; ; attempt++) {
        const via = Math.random() < 0.5 ? a : b;
        sent++;
        if (attempt < 3 && Math.random() < 0.5) {
          dropped++;
          await sendAndLeave(via, key, petId, w, `write-${w}`);
          await sleep(Math.random() * 20);
          continue;
        }
        const res = await keyedPatch(via, key, petId, w, `write-${w}`);
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        if (res.status === 200) return;
        assert.is(res.status, 409, res.text);
        await sleep(10);
      }
    }),
  );
  // Requests dropped after their last retry got its answer may still be running: a
  // graceful stop lets them finish before the log is read.
  for (const service of [a, b]) assert.is((await service.stop()).code, 0);
  const events = await quantitySets(postgresTarget(), fresh.db);
  const perWrite = new Map<number, number>();
  for (const e of events) {
    const { quantity } = JSON.parse(e.data) as { quantity: number };
    perWrite.set(quantity, (perWrite.get(quantity) ?? 0) + 1);
  }
  console.log(
    `retry storm: ${WRITES} intended writes, ${sent} requests (${dropped} dropped), answers ${JSON.stringify(Object.fromEntries(statuses))}, ${events.length} events`,
  );
  assert.is(events.length, WRITES);
  for (let w = 0; w < WRITES; w++) assert.is(perWrite.get(w), 1, `write ${w}`);
});

across.run();

const twoProcesses = suite<{ fresh: FreshDatabase }>('Idempotency-Key across two service processes on one SQLite file');
twoProcesses.after.each(async (ctx) => {
  await killAll();
  await ctx.fresh.cleanup();
});

twoProcesses('one key sent at once through both: exactly one event, the rest replays or 409', async (ctx) => {
  const target = storeTargets().find((t) => t.name === 'sqlite')!;
  ctx.fresh = await target.fresh();
  const a = await startService({ db: ctx.fresh.db, expectKey: true });
  const key = a.bootstrapKey!;
  const b = await startService({ db: ctx.fresh.db, expectKey: false });
  assert.is((await runScript('track', ['1'], { db: ctx.fresh.db })).status, 0);
  const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => keyedPatch(i % 2 === 0 ? a : b, key, 1, 4, 'one-file')));
  const appended = answers.filter((r) => r.status === 200 && r.headers['idempotent-replayed'] === undefined);
  assert.is(appended.length, 1, answers.map((r) => `${r.status}${r.headers['idempotent-replayed'] ? 'r' : ''}`).join(' '));
  for (const r of answers) assert.ok(r.status === 200 || r.status === 409, r.text);
  assert.is((await quantitySets(target, ctx.fresh.db)).length, 1);
});

twoProcesses.run();

const killed = suite<{ fresh: FreshDatabase }>('Idempotency-Key after SIGKILL between commit and answer');
killed.after.each(async (ctx) => {
  await killAll();
  await ctx.fresh.cleanup();
});

/** Sends a keyed PATCH whole and keeps the connection open; received() is what came back. */
function sendAndWatch(service: Service, key: string, petId: number, quantity: number, idempotencyKey: string) {
  const body = JSON.stringify({ quantity });
  let received = '';
  const socket = connect(service.port, '127.0.0.1', () => {
    socket.write(
      `PATCH /v1/inventory/${petId} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\n` +
        `Idempotency-Key: ${idempotencyKey}\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    );
  });
  socket.setEncoding('utf8').on('data', (text: string) => (received += text));
  // The kill resets it: expected.
  socket.on('error', () => undefined);
  return { socket, received: () => received };
}

/**
 * Waits until the process is stopped (state T in /proc, Linux); one that exits instead
 * fails the read, and one that never commits is caught by the test run's timeout for the file.
 */
async function untilStopped(pid: number): Promise<void> {
  for (;;) {
    const state = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '')[0];
    if (state === 'T') return;
    if (state === 'Z') assert.unreachable(`process ${pid} exited instead of stopping after its commit`);
    await sleep(5);
  }
}

for (const target of storeTargets()) {
  killed(
    `[${target.name}] killed between the commit and the answer: the retry through a new process replays it, one event`,
    async (ctx) => {
      ctx.fresh = await target.fresh();
      // This start stops itself right after it commits a stored answer, before answering.
      const first = await startService({ db: ctx.fresh.db, expectKey: true, preload: ['./test/kit/stop-after-commit/entry.mjs'] });
      const key = first.bootstrapKey!;
      assert.is((await runScript('track', ['1'], { db: ctx.fresh.db })).status, 0);
      const client = sendAndWatch(first, key, 1, 5, 'killed');
      await untilStopped(first.proc.pid!);
      const store = await target.open(ctx.fresh.db, { readonly: true });
      try {
        assert.is(await lastSeqOf(store), 2, 'the write was committed');
      } finally {
        await store.close();
      }
      first.kill();
      await first.exited;
      assert.is(client.received(), '', 'no byte of the answer reached the client');
      client.socket.destroy();
      const second = await startService({ db: ctx.fresh.db, expectKey: false });
      const retry = await keyedPatch(second, key, 1, 5, 'killed');
      assert.is(retry.status, 200);
      assert.is(retry.headers['idempotent-replayed'], 'true');
      assert.is(retry.headers.etag, '"2"');
      assert.is((await quantitySets(target, ctx.fresh.db)).length, 1);
    },
  );
}

killed.run();
