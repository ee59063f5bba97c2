// rebuild-projection while the service writes: nothing acknowledged is lost or
// overwritten, readers never see an empty or half-built projection, and the result
// equals the replay.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { makeCommandHandler } from '../src/commands.ts';
import { rebuildProjection } from '../src/rebuild.ts';
import { openDatabase } from '../src/store/database.ts';
import { sqliteStoreOn } from '../src/store/sqlite/store.ts';
import type { ItemBody } from './helpers.ts';
import { killAll, startService } from './service.ts';

const PETS = 20;

function openStore(path: string) {
  const db = openDatabase(path);
  const store = sqliteStoreOn(db);
  return { db, store, commands: makeCommandHandler({ store, now: Date.now }) };
}

const rebuild = suite<{ dir: string; path: string }>('rebuild-projection under writes', { dir: '', path: '' });
rebuild.before.each((ctx) => {
  ctx.dir = mkdtempSync(join(tmpdir(), 'inv-rebuild-'));
  ctx.path = join(ctx.dir, 'inventory.db');
});
rebuild.after.each(async (ctx) => {
  await killAll();
  rmSync(ctx.dir, { recursive: true, force: true });
});

rebuild('an event another process appends during the replay is caught up before the swap', async ({ path }) => {
  const service = openStore(path);
  await service.commands.handleAll(
    Array.from({ length: PETS }, (_, i) => ({
      type: 'TrackPet' as const,
      petId: BigInt(i + 1),
      quantity: 1,
      status: 'available' as const,
    })),
    { actor: 'cli:t', requestId: 't' },
  );
  const operator = sqliteStoreOn(openDatabase(path));
  let wrote = false;
  const report = await rebuildProjection(operator, {
    check: false,
    onProgress: (done, total) => {
      // The replay of the snapshot is over; another process writes before the swap.
      if (done === total && !wrote) {
        wrote = true;
        const other = spawnSync(join(process.cwd(), 'scripts', 'set-status'), ['3', 'sold', '--db', path], { encoding: 'utf8' });
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
  service.db.close();
});

rebuild('with the service running and writing: acknowledged writes survive three rebuilds, GET never shrinks', async ({ path }) => {
  const seed = openStore(path);
  const key = await seed.store.keys.create('load', 'test');
  await seed.commands.handleAll(
    Array.from({ length: PETS }, (_, i) => ({
      type: 'TrackPet' as const,
      petId: BigInt(i + 1),
      quantity: 0,
      status: 'available' as const,
    })),
    { actor: 'cli:t', requestId: 't' },
  );
  // Enough history that each rebuild's replay takes a while, so writes land during it.
  for (let round = 0; round < 10; round++) {
    await seed.commands.handleAll(
      Array.from({ length: 2000 }, (_, i) => ({ type: 'SetQuantity' as const, petId: BigInt((i % PETS) + 1), quantity: i })),
      { actor: 'cli:t', requestId: `seed-${round}` },
    );
  }
  seed.db.close();

  const service = await startService(path, { expectKey: false });
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

  const runRebuild = () =>
    new Promise<string>((resolve, reject) => {
      const child = spawn(join(process.cwd(), 'scripts', 'rebuild-projection'), ['--db', path], { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      child.stdout.on('data', (c) => (out += c));
      child.stderr.on('data', (c) => (out += c));
      child.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`rebuild exited ${code}: ${out}`))));
    });
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
  const check = openStore(path);
  assert.is(await check.store.lastSeq(), PETS + 20_000 + writes, 'one event per acknowledged write, none lost');
  assert.equal((await rebuildProjection(check.store, { check: true })).differences, []);
  check.db.close();
});

rebuild.run();
