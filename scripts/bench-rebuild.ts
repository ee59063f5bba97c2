// npm run bench:rebuild — how fast scripts/rebuild-projection replays a large log.
// Makes a database of 1,000,000 events over 10,000 pets (through the real event store,
// hash chain included), then measures, alternating, a plain iteration over the same event
// rows and columns the replay reads (the floor: reading them at all) and the full rebuild (replay + shadow table +
// swap). Prints the medians and their ratio, and writes them to bench-results/rebuild.json.
// Targets: rebuild <= 2 s, and <= 2x the plain iteration.
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeCommandHandler } from '../src/application/write/commands.ts';
import type { Command } from '../src/domain/decide.ts';
import { rebuildProjection } from '../src/application/verify/rebuild.ts';
import { openDatabase } from '../src/store/sqlite/database.ts';
import { sqliteStoreOn } from '../src/store/sqlite/store.ts';
import { median } from './bench/harness.ts';
import { scriptArgs } from './script-args.ts';

const { values } = scriptArgs(import.meta.url, {
  events: { type: 'string', default: '1000000' },
  pets: { type: 'string', default: '10000' },
  runs: { type: 'string', default: '5' },
  // Keep the generated database at this path and reuse it on the next run.
  db: { type: 'string' },
});
const EVENTS = Number(values.events);
const PETS = Number(values.pets);
const RUNS = Number(values.runs);

const dir = mkdtempSync(join(tmpdir(), 'bench-rebuild-'));
const path = values.db ?? join(dir, 'inventory.db');
const reuse = values.db !== undefined && existsSync(values.db);
try {
  const db = openDatabase(path);
  // Only for making the data set: the measured work reads, and the swap commits with FULL.
  db.pragma('synchronous = OFF');
  const store = sqliteStoreOn(db);
  const commands = makeCommandHandler({ store, now: Date.now });

  const t0 = performance.now();
  const meta = { actor: 'bench', requestId: 'bench' };
  const BATCH = 20_000;
  let made = reuse ? await store.snapshot((view) => Promise.resolve(view.lastSeq)) : 0;
  let seed = 42;
  const rand = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  while (made < EVENTS) {
    const batch: Command[] = [];
    for (let i = 0; i < BATCH && made < EVENTS; i++, made++) {
      const petId = BigInt((made % PETS) + 1);
      if (made < PETS) batch.push({ type: 'TrackPet', petId, quantity: 10, status: 'available' });
      else if (rand() < 0.05) batch.push({ type: 'SetStatus', petId, status: rand() < 0.5 ? 'pending' : 'sold' });
      else batch.push({ type: 'SetQuantity', petId, quantity: Math.floor(rand() * 1000) });
    }
    await commands.handleAll(batch, meta);
  }
  db.pragma('synchronous = FULL');
  db.pragma('wal_checkpoint(TRUNCATE)');
  const madeIn = (performance.now() - t0) / 1000;
  const sizeMb = statSync(path).size / 1e6;
  const origin = reuse ? `reused ${path}` : `made in ${madeIn.toFixed(1)} s`;
  console.log(
    `rebuild benchmark: ${EVENTS.toLocaleString('en')} events over ${PETS.toLocaleString('en')} pets ` +
      `(database ${sizeMb.toFixed(0)} MB, ${origin}); ${RUNS} runs each, alternating, after one warm-up`,
  );

  const iterate = async () => {
    let rows = 0;
    for await (const page of store.replayRows()) for (const row of page) if (row[0] > 0n) rows++;
    return rows;
  };
  const rebuild = async () => (await rebuildProjection(store, { check: false })).eventsReplayed;
  const timed = async (fn: () => Promise<number>) => {
    const start = performance.now();
    const n = await fn();
    if (n !== EVENTS) throw new Error(`expected ${EVENTS} events, got ${n}`);
    return (performance.now() - start) / 1000;
  };
  await timed(iterate);
  await timed(rebuild);
  const iterations: number[] = [];
  const rebuilds: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    iterations.push(await timed(iterate));
    rebuilds.push(await timed(rebuild));
  }
  const it = median(iterations);
  const rb = median(rebuilds);
  const ratio = rb / it;
  const row = (name: string, xs: number[]) =>
    `${name.padEnd(28)} ${median(xs).toFixed(3).padStart(7)} s  (min ${Math.min(...xs).toFixed(3)}, max ${Math.max(...xs).toFixed(3)})`;
  console.log(row('plain iteration over rows', iterations));
  console.log(row('rebuild-projection', rebuilds));
  console.log(
    `rebuild: ${rb.toFixed(3)} s (target <= 2 s: ${rb <= 2 ? 'met' : 'NOT met'}); ` +
      `ratio rebuild / iteration: ${ratio.toFixed(2)}x (target <= 2x: ${ratio <= 2 ? 'met' : 'NOT met'})`,
  );
  mkdirSync('bench-results', { recursive: true });
  writeFileSync(
    'bench-results/rebuild.json',
    `${JSON.stringify({ events: EVENTS, pets: PETS, runs: RUNS, iterationSeconds: iterations, rebuildSeconds: rebuilds, medianIterationSeconds: it, medianRebuildSeconds: rb, ratio, node: process.version, date: new Date().toISOString() }, null, 2)}\n`,
  );
  db.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
