// Safe retries between service processes: the same Idempotency-Key sent at once through
// two instances on one PostgreSQL database, clients that drop their connections and
// retry, and a service killed after a commit whose answer never reached its client.
// Each intended write is one event, however often it is sent.
import { connect } from 'node:net';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { Response } from './kit/http.ts';
import { runScript } from './kit/scripts.ts';
import { killAll, startService, type Service } from './kit/service.ts';
import { type EventRow, eventsOf, lastSeqOf } from './kit/fixtures.ts';
import { storeTargets, type FreshDatabase, type StoreTarget } from './kit/stores.ts';
import { postgresTarget } from './kit/postgres-target.ts';

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
  // Requests dropped after their last retry got its answer may still be running.
  await sleep(300);
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

for (const target of storeTargets()) {
  killed(`[${target.name}] the retry through a new process replays the committed answer: one event`, async (ctx) => {
    ctx.fresh = await target.fresh();
    const first = await startService({ db: ctx.fresh.db, expectKey: true });
    const key = first.bootstrapKey!;
    assert.is((await runScript('track', ['1'], { db: ctx.fresh.db })).status, 0);
    await sendAndLeave(first, key, 1, 5, 'killed');
    // Killed as soon as the event is in the log: its client never read an answer.
    const store = await target.open(ctx.fresh.db, { readonly: true });
    try {
      for (let i = 0; i < 500 && (await lastSeqOf(store)) < 2; i++) await sleep(2);
      first.kill();
      assert.is(await lastSeqOf(store), 2, 'the write was committed');
    } finally {
      await store.close();
    }
    await first.exited;
    const second = await startService({ db: ctx.fresh.db, expectKey: false });
    const retry = await keyedPatch(second, key, 1, 5, 'killed');
    assert.is(retry.status, 200);
    assert.is(retry.headers['idempotent-replayed'], 'true');
    assert.is(retry.headers.etag, '"2"');
    assert.is((await quantitySets(target, ctx.fresh.db)).length, 1);
  });
}

killed.run();
