// rebuild-projection while the service writes: nothing acknowledged is lost or
// overwritten, readers never see an empty or half-built projection, and the result
// equals the replay.
import pg from 'pg';
import * as assert from 'uvu/assert';
import { appliedEntries, makeCommandHandler } from '../../src/application/write/commands.ts';
import { rebuildProjection } from '../../src/application/verify/rebuild.ts';
import type { ItemBody } from '../kit/http.ts';
import { runScript, runScriptSync } from '../kit/scripts.ts';
import { killAll, startService } from '../kit/service.ts';
import { query } from '../kit/sql.ts';
import { storeTargets, type StoreTarget } from '../kit/stores.ts';
import { targetSuites } from '../kit/suites.ts';
import { lastSeqOf } from '../kit/fixtures.ts';

const PETS = 20;

/** The target's store on path, with a command handler on it. */
async function storeWithCommands(target: StoreTarget, path: string) {
  const store = await target.open(path);
  return { store, commands: makeCommandHandler({ store, now: Date.now }) };
}

/** Tracks pets 1..count, each with this quantity, in one batch. */
function trackAll(commands: ReturnType<typeof makeCommandHandler>, count: number, quantity = 1) {
  return commands
    .handleAll(
      Array.from({ length: count }, (_, i) => ({
        type: 'TrackPet' as const,
        petId: BigInt(i + 1),
        quantity,
        status: 'available' as const,
      })),
      { actor: 'cli:t', requestId: 't' },
    )
    .then(appliedEntries);
}

const onFreshDatabase = {
  async beforeEach(ctx: { target: StoreTarget; path: string; cleanup: () => Promise<void> }) {
    const fresh = await ctx.target.fresh();
    ctx.path = fresh.db;
    ctx.cleanup = fresh.cleanup;
  },
  async afterEach(ctx: { cleanup: () => Promise<void> }) {
    await killAll();
    await ctx.cleanup();
  },
};

const rebuild = targetSuites<{ path: string; cleanup: () => Promise<void> }>('rebuild-projection under writes', onFreshDatabase);

rebuild('an event another process appends during the replay is caught up before the swap', async ({ target, path }) => {
  const service = await storeWithCommands(target, path);
  await trackAll(service.commands, PETS);
  const operator = await target.open(path);
  let wrote = false;
  const report = await rebuildProjection(operator, {
    check: false,
    onProgress: (done, total) => {
      // The replay of the snapshot is over; another process writes before the swap.
      if (done === total && !wrote) {
        wrote = true;
        // Blocking on purpose: the write must land before the rebuild goes on to its swap.
        const other = runScriptSync('set-status', ['3', 'sold'], { db: path });
        assert.is(other.status, 0, other.stderr);
      }
    },
  });
  assert.ok(wrote);
  assert.is(report.caughtUp, 1, 'the write during the replay was caught up');
  assert.is(report.eventsReplayed, PETS + 1);
  assert.equal(report.differences, []);
  assert.is((await service.store.loadEntries([3n])).get(3n)?.status, 'sold', 'the write is in the swapped-in projection');
  assert.equal((await rebuildProjection(operator, { check: true })).differences, []);
  await operator.close();
  await service.store.close();
});

rebuild('with the service running and writing: acknowledged writes survive three rebuilds, GET never shrinks', async ({ target, path }) => {
  const seed = await storeWithCommands(target, path);
  const key = await seed.store.keys.create('load', 'test');
  await trackAll(seed.commands, PETS, 0);
  // Enough history that each rebuild's replay takes a while, so writes land during it.
  for (let round = 0; round < 10; round++) {
    await seed.commands
      .handleAll(
        Array.from({ length: 2000 }, (_, i) => ({ type: 'SetQuantity' as const, petId: BigInt((i % PETS) + 1), quantity: i })),
        { actor: 'cli:t', requestId: `seed-${round}` },
      )
      .then(appliedEntries);
  }
  await seed.store.close();

  const service = await startService({ db: path, expectKey: false });
  const auth = { Authorization: `Bearer ${key}` };
  const acknowledged = new Map<number, number>();
  let stop = false;
  let writes = 0;
  const writer = (async () => {
    for (let i = 0; !stop && i < 5000; i++) {
      const pet = (i % PETS) + 1;
      const res = await service.request({
        method: 'PATCH',
        path: `/v1/inventory/${pet}`,
        headers: { ...auth, 'Content-Type': 'application/json' },
        body: JSON.stringify({ quantity: 100_000 + i }),
      });
      assert.is(res.status, 200, res.text);
      acknowledged.set(pet, 100_000 + i);
      writes++;
    }
  })();
  let reads = 0;
  const reader = (async () => {
    while (!stop) {
      const res = await service.request({ path: '/v1/inventory', headers: auth });
      assert.is(res.status, 200);
      assert.is(res.json<ItemBody[]>().length, PETS, 'a reader saw an incomplete projection');
      reads++;
    }
  })();

  const runRebuild = async () => {
    const r = await runScript('rebuild-projection', [], { db: path, timeoutMs: 120_000 });
    if (r.status !== 0) throw new Error(`rebuild exited ${r.status}: ${r.stdout}${r.stderr}`);
    return r.stdout + r.stderr;
  };
  const outputs: string[] = [];
  try {
    for (let i = 0; i < 3; i++) outputs.push(await runRebuild());
  } finally {
    stop = true;
    await Promise.all([writer, reader]);
  }
  assert.ok(writes > 0 && reads > 0, `writes ${writes}, reads ${reads}`);
  assert.ok(
    outputs.some((o) => /appended during the rebuild/.test(o)),
    `no rebuild overlapped a write:\n${outputs.join('')}`,
  );

  const final = (await service.request({ path: '/v1/inventory', headers: auth })).json<ItemBody[]>();
  for (const { petId, quantity } of final) {
    if (acknowledged.has(petId)) assert.is(quantity, acknowledged.get(petId), `pet ${petId}: the last acknowledged write`);
  }
  await service.stop();
  const check = await target.open(path);
  try {
    assert.is(await lastSeqOf(check), PETS + 20_000 + writes, 'one event per acknowledged write, none lost');
    assert.equal((await rebuildProjection(check, { check: true })).differences, []);
  } finally {
    await check.close();
  }
});

rebuild.run();

// PostgreSQL: the instances' writers wait on a rebuild only for its swap. The shadow is
// written and compared without the chain head; the head is held only to catch up and
// rename, however large the projection.
const swap = targetSuites<{ path: string; cleanup: () => Promise<void> }>(
  'rebuild-projection holds the chain head only for the swap',
  onFreshDatabase,
  storeTargets().filter((t) => t.name === 'postgres'),
);

swap('while 40 000 entries are rebuilt, the head is never held for more than a fraction of it', async ({ target, path }) => {
  const seed = await storeWithCommands(target, path);
  const ENTRIES = 40_000;
  await trackAll(seed.commands, ENTRIES);
  // The projection drifted: the rebuild has something to write.
  await query({ target, db: path }, 'UPDATE inventory SET quantity = 9 WHERE pet_id <= 100');

  // Polls the head as a writer would take it (without waiting), every few ms, and times
  // the longest stretch it was held by someone else.
  const poller = new pg.Client({ connectionString: path });
  await poller.connect();
  let polling = true;
  let longestHeldMs = 0;
  const polled = (async () => {
    let heldSince: number | undefined;
    while (polling) {
      const free = await poller.query('BEGIN; SELECT seq FROM chain_head FOR UPDATE NOWAIT').then(
        () => true,
        (error: { code?: string }) => {
          if (error.code !== '55P03') throw error;
          return false;
        },
      );
      await poller.query('ROLLBACK');
      const at = performance.now();
      if (free) heldSince = undefined;
      else longestHeldMs = Math.max(longestHeldMs, at - (heldSince ??= at));
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  })();
  const operator = await target.open(path);
  const started = performance.now();
  const report = await rebuildProjection(operator, { check: false });
  const tookMs = performance.now() - started;
  polling = false;
  await polled;
  await poller.end();
  await operator.close();
  await seed.store.close();
  assert.is(report.differences.length, 100, 'the drifted rows were put right');
  assert.is(report.entries, ENTRIES);
  console.log(`  rebuilt ${ENTRIES} entries in ${tookMs.toFixed(0)} ms; the chain head was held at most ${longestHeldMs.toFixed(0)} ms`);
  assert.ok(longestHeldMs < tookMs / 4, `held ${longestHeldMs.toFixed(0)} ms of ${tookMs.toFixed(0)} ms`);
});

swap.run();
