// appendHistory on both stores: a copy that took the first part of a log and then the
// rest, page by page, holds what a copy of the whole holds: the events verbatim, the
// projection, stock_adjustments and the Merkle tree. A history that does not continue the
// copy's chain (a seq skipped, another prev_hash) is refused and writes nothing.
import * as assert from 'uvu/assert';
import type { ChainRow } from '../../src/store/event-log.ts';
import { HistoryDiverged } from '../../src/store/history-copy.ts';
import type { InventoryStore } from '../../src/store/port.ts';
import { commandsOn, entriesOf, eventsOf, trackPets } from '../kit/fixtures.ts';
import type { StoreTarget } from '../kit/stores.ts';
import { targetSuites } from '../kit/suites.ts';

const LOG_ID = '0d9f6d3e-4c1b-4b8e-9a57-2f1e8c3b6a10';

interface Opened {
  store: InventoryStore;
  cleanup: () => Promise<void>;
}

interface Ctx {
  opened: Opened[];
  /** A fresh store on the suite's target, closed after the test. */
  open: () => Promise<InventoryStore>;
}

const append = targetSuites<Ctx>('appendHistory: a kept copy grows', {
  beforeEach(ctx) {
    ctx.opened = [];
    ctx.open = async () => {
      const target: StoreTarget = ctx.target;
      const fresh = await target.fresh();
      let t = Date.parse('2026-05-06T07:08:09.000Z');
      const store = await target.open(fresh.db, { now: () => (t += 1000) });
      ctx.opened.push({ store, cleanup: fresh.cleanup });
      return store;
    };
  },
  async afterEach(ctx) {
    for (const { store, cleanup } of ctx.opened) {
      await store.close();
      await cleanup();
    }
  },
});

/** A source log of 40 events: pets tracked, quantities set and a status changed, the
 * same pets before and after the cut at 17. */
async function source(ctx: Ctx): Promise<ChainRow[]> {
  const store = await ctx.open();
  await trackPets(
    store,
    [1, 2, 3, 4, 5].map((petId) => ({ petId, quantity: petId })),
  );
  const commands = commandsOn(store);
  for (let i = 0; i < 34; i++) {
    const petId = BigInt(1 + (i % 5));
    const command =
      i === 20 ? { type: 'SetStatus' as const, petId, status: 'sold' as const } : { type: 'SetQuantity' as const, petId, quantity: 10 + i };
    const result = await commands.handleAll([command], { actor: `clerk-${i % 2}`, requestId: `r${i}` });
    assert.is(result.kind, 'applied', `command ${i}`);
  }
  await trackPets(store, [{ petId: 6 }]);
  const rows: ChainRow[] = [];
  for await (const page of store.chainRows()) rows.push(...page);
  assert.is(rows.length, 40);
  return rows;
}

/** The rows in pages of size, as a copy's source hands them over. */
async function* pages(rows: ChainRow[], size: number): AsyncIterable<ChainRow[]> {
  for (let i = 0; i < rows.length; i += size) yield await Promise.resolve(rows.slice(i, i + size));
}

/** What the tests compare: the whole store as its reads give it. */
async function contents(store: InventoryStore) {
  const adjustments = [];
  for await (const page of store.stockAdjustments({ after: 0n })) adjustments.push(...page);
  const levels = [];
  for (let level = 0; level < 6; level++) levels.push(await store.treeRow(level, 0, 64));
  return {
    events: await eventsOf(store),
    entries: await entriesOf(store),
    adjustments,
    tree: levels,
    nodes: await store.treeNodeCount(),
    head: await store.logHead(),
  };
}

append('the first 17 events imported, then the other 23 appended in pages: the same store as the 40 imported', async (ctx) => {
  const rows = await source(ctx);
  const whole = await ctx.open();
  await whole.importHistory({ events: pages(rows, 40), keys: [], keyEvents: [], logId: LOG_ID });
  const grown = await ctx.open();
  await grown.importHistory({ events: pages(rows.slice(0, 17), 17), keys: [], keyEvents: [], logId: LOG_ID });
  assert.equal(await grown.appendHistory(pages(rows.slice(17), 5)), { events: 23 });
  assert.equal(await contents(grown), await contents(whole));
  assert.is(await grown.adjustmentMismatch(), undefined, 'stock_adjustments agrees with the events');
  assert.equal(await grown.appendHistory(pages([], 1)), { events: 0 }, 'nothing to append');
});

append('an empty store is appended to from the first event', async (ctx) => {
  const rows = await source(ctx);
  const whole = await ctx.open();
  await whole.importHistory({ events: pages(rows, 40), keys: [], keyEvents: [], logId: LOG_ID });
  const grown = await ctx.open();
  await grown.appendHistory(pages(rows, 7));
  assert.equal((await contents(grown)).events, (await contents(whole)).events);
  assert.equal((await contents(grown)).tree, (await contents(whole)).tree);
});

append('a history that skips an event or links to another hash is refused, and nothing is written', async (ctx) => {
  const rows = await source(ctx);
  const grown = await ctx.open();
  await grown.importHistory({ events: pages(rows.slice(0, 17), 17), keys: [], keyEvents: [], logId: LOG_ID });
  const before = await contents(grown);
  const relinked = rows.slice(17).map((row, i) => (i === 0 ? ([...row.slice(0, 8), 'f'.repeat(64), row[9]] as ChainRow) : row));
  for (const [what, history] of [
    ['a seq skipped', rows.slice(18)],
    ['another prev_hash', relinked],
    ['what it holds already', rows.slice(16)],
  ] as const) {
    try {
      await grown.appendHistory(pages(history, 5));
      assert.unreachable(`${what}: appended`);
    } catch (error) {
      assert.instance(error, HistoryDiverged, `${what}: ${String(error)}`);
      assert.match((error as Error).message, /the store ends at seq 17 with the hash [0-9a-f]{64}: nothing was appended$/);
    }
    assert.equal(await contents(grown), before, `${what}: nothing written`);
  }
});

append.run();
