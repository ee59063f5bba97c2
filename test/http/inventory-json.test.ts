// The list body is written into one buffer of the last render's size and 64 KiB chunks
// beyond it: whatever the size and the hint, it must be exactly the JSON a naive
// rendering gives, ids above 2^53 included.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { PetStatus } from '../../src/domain/events.ts';
import { inventoryListRender, renderInventory } from '../../src/http/routes/inventory-json.ts';
import { makeInventoryCache } from '../../src/application/read/inventory-cache.ts';
import { appliedEntries, commandsFor } from '../../src/application/write/commands.ts';
import type { InventoryRow } from '../../src/store/projection.ts';
import { storeTargets, type StoreTarget } from '../kit/stores.ts';

const render = suite('renderInventory');

render('equals a naive rendering across chunk boundaries; the tag follows versions', () => {
  for (const count of [0, 1, 1200, 5000]) {
    const rows: [bigint, number, PetStatus, number][] = Array.from({ length: count }, (_, i) => [
      9223372036854775807n - BigInt(count - i),
      (i * 7919) % 2147483648,
      (['available', 'pending', 'sold'] as const)[i % 3]!,
      1 + (i % 5),
    ]);
    const naive = `[${rows.map(([p, q, s]) => `{"petId":${p},"quantity":${q},"status":"${s}"}`).join(',')}]`;
    const { body, etag } = renderInventory(rows);
    assert.is(body.toString('latin1'), naive, `${count} rows`);
    // The last render's size as a hint: exact, too small by more than the spare room, larger.
    for (const hint of [naive.length, Math.max(0, naive.length - 100_000), naive.length * 3]) {
      const hinted = renderInventory(rows, hint);
      assert.is(hinted.body.toString('latin1'), naive, `${count} rows, size hint ${hint}`);
      assert.is(hinted.etag, etag, `${count} rows, size hint ${hint}: the same tag`);
    }
    assert.match(etag, /^"[A-Za-z0-9_-]{27}"$/);
    if (count > 0) {
      const bumped = rows.map(([p, q, s, v], i): [bigint, number, PetStatus, number] => [p, q, s, i === 0 ? v + 1 : v]);
      assert.is.not(renderInventory(bumped).etag, etag, 'a version change changes the tag');
    }
  }
});

render.run();

const cache = suite('the inventory cache');

async function oneRenderAtATime(target: StoreTarget): Promise<void> {
  const fresh = await target.fresh();
  const store = await target.open(fresh.db);
  try {
    const commands = commandsFor(store);
    const track = (first: number, count: number) =>
      commands
        .handleAll(
          Array.from({ length: count }, (_, i) => ({
            type: 'TrackPet' as const,
            petId: BigInt(first + i),
            quantity: 1,
            status: 'available' as const,
          })),
          { actor: 'cli:test', requestId: 'seed' },
        )
        .then(appliedEntries);
    const PETS = 2_000;
    await track(1, PETS);
    let active = 0;
    let most = 0;
    let renders = 0;
    // The first render is held until every request below has been made, so that they
    // all arrive during it.
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    const counted = makeInventoryCache(
      {
        changeToken: () => store.changeToken(),
        // Never known without asking: every request takes the road that counts renders.
        changeTokenNow: () => undefined,
        async *inventoryRows(): AsyncIterable<InventoryRow[]> {
          renders++;
          most = Math.max(most, ++active);
          try {
            if (renders === 1) await held;
            yield* store.inventoryRows();
          } finally {
            active--;
          }
        },
      },
      inventoryListRender(),
    );
    // A change, then a request, again and again, as a PATCH and a GET from each of
    // many clients: each answer must show the change made before its request.
    const asked: { petId: number; body: Promise<{ body: Buffer }> }[] = [];
    for (let i = 1; i <= 12; i++) {
      await track(PETS + i, 1);
      asked.push({ petId: PETS + i, body: counted.current() });
    }
    release();
    for (const { petId, body } of asked) {
      assert.ok((await body).body.includes(`{"petId":${petId},`), `the answer asked for after pet ${petId} was tracked shows it`);
    }
    assert.is(most, 1, 'one render at a time');
    assert.is(renders, 2, 'the held one, and one shared by every request that came during it');
  } finally {
    await store.close();
    await fresh.cleanup();
  }
}

for (const target of storeTargets()) {
  cache(`${target.name}: renders one list at a time: requests during a render wait and share the next one, which shows their changes`, () =>
    oneRenderAtATime(target),
  );
}

cache.run();
