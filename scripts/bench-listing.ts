// node --import tsx scripts/bench-listing.ts — how long re-rendering GET /v1/inventory's body for 100,000
// pets stalls the event loop, as the service runs it (writer thread, read-only WAL
// connections, the projection read a page at a time with a turn of the event loop
// between pages). Each run commits a change through the store, so that the next
// current() re-renders, and samples the event loop's delay meanwhile.
//   node --import tsx scripts/bench-listing.ts [--pets N] [--runs N] [--inline]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { makeCommandHandler } from '../src/application/write/commands.ts';
import { makeInventoryCache } from '../src/application/read/inventory-cache.ts';
import { inventoryListRender } from '../src/http/routes/inventory-json.ts';
import { openSqliteStore } from '../src/store/sqlite/store.ts';
import { makeDatabase } from './bench/fixtures.ts';
import { median } from './bench/harness.ts';
import { scriptArgs } from './script-args.ts';

const { values } = scriptArgs(import.meta.url, {
  pets: { type: 'string', default: '100000' },
  runs: { type: 'string', default: '10' },
  inline: { type: 'boolean' },
});
const PETS = Number(values.pets);
const RUNS = Number(values.runs);

const dir = mkdtempSync(join(tmpdir(), 'bench-listing-'));
try {
  const path = join(dir, 'inventory.db');
  await makeDatabase(path, PETS);
  // --inline: one connection, the whole list read at once, for comparison.
  const store = await openSqliteStore(path, { writer: values.inline ? 'inline' : 'thread' });
  const commands = makeCommandHandler({ store, now: Date.now });
  const cache = makeInventoryCache(store, inventoryListRender());
  await cache.current();
  const renders: number[] = [];
  const stalls: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    await commands.handle({ type: 'SetQuantity', petId: BigInt(1 + run), quantity: run }, { actor: 'bench', requestId: `r${run}` });
    const delay = monitorEventLoopDelay({ resolution: 1 });
    delay.enable();
    const started = performance.now();
    const { body } = await cache.current();
    renders.push(performance.now() - started);
    delay.disable();
    stalls.push(delay.max / 1e6);
    if (body.length < PETS * 40) throw new Error(`a body of ${body.length} bytes for ${PETS} pets`);
  }
  await store.close();
  console.log(
    `GET /v1/inventory re-render, ${PETS.toLocaleString('en')} pets, ${values.inline ? 'inline' : 'writer thread, paged'}, ${RUNS} runs: ` +
      `render median ${median(renders).toFixed(0)} ms (max ${Math.max(...renders).toFixed(0)}); ` +
      `longest event-loop stall median ${median(stalls).toFixed(1)} ms (max ${Math.max(...stalls).toFixed(1)})`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
