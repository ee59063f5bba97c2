// The log's growth rows of npm run bench (--only growth): whether the service's costs stay
// flat as its log grows. One log of 1,000 pets is grown through the store's own batch
// path (commandsFor(store).handleAll, batches of 10,000 QuantitySets, not HTTP) to each
// size in turn, a copy kept at each; then at each size: PATCH/s and its p99 and GET p99
// (the service as npm start runs it, with a signing key, in rounds alternated across the
// sizes, each round on a fresh copy so that its PATCHes do not grow the log it measures),
// inclusion and consistency proof p99, the monitor's bytes and time, rebuild-projection's
// time, and the bytes on disk per event, by table and by index.
import { copyFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { commandsFor } from '../../src/application/write/commands.ts';
import { openStore } from '../../src/store/open.ts';
import { createDatabase, dropDatabase } from '../embedded-postgres.ts';
import { makeDatabase, freePort } from './fixtures.ts';
import { loadLine, measure, median, ready, startService, stop, type Load } from './harness.ts';
import { monitorRun, proofP99s, type LogRow } from './log.ts';
import { timedScript } from './tiles.ts';

const PETS = 1000;
const BATCH = 10_000;
/** Rounds of each size's PATCH and GET loads, alternated across the sizes. */
const ROUNDS = 3;
/** How far the largest log's PATCH/s and GET p99 may be from the smallest's. */
const FLAT = 0.15;

/** One log at one size, kept as built: every run is on a copy of it. */
interface Sized {
  events: number;
  /** A SQLite path or a PostgreSQL URL. */
  target: string;
  /** The bench's key in it. */
  key: string;
  /** A fresh copy of the log under name: its path or URL. */
  copy(name: string): Promise<string>;
  /** Removes a copy once its run is over. */
  discard(copy: string): Promise<void>;
}

/** Appends QuantitySets to the store at target until its log holds events events. */
async function growTo(target: string, events: number): Promise<void> {
  const store = await openStore(target);
  try {
    const commands = commandsFor(store);
    let size = (await store.logHead()).seq;
    let quantity = size;
    while (size < events) {
      const count = Math.min(BATCH, events - size);
      const batch = [];
      for (let i = 0; i < count; i++)
        batch.push({ type: 'SetQuantity' as const, petId: BigInt(1 + (i % PETS)), quantity: quantity++ % 1000 });
      await commands.handleAll(batch, { actor: 'cli:bench', requestId: 'growth' });
      size += count;
    }
  } finally {
    await store.close();
  }
}

/** Bytes on disk by table and by index (SQLite: dbstat; PostgreSQL: a table with its
 * TOAST, each index on its own). */
async function bytesByTable(target: string): Promise<Map<string, number>> {
  const byTable = new Map<string, number>();
  if (target.startsWith('postgres')) {
    const client = new pg.Client({ connectionString: target });
    await client.connect();
    const { rows } = await client.query<{ name: string; bytes: string }>(
      `SELECT c.relname AS name, CASE c.relkind WHEN 'r' THEN pg_total_relation_size(c.oid) - pg_indexes_size(c.oid)
         ELSE pg_relation_size(c.oid) END AS bytes
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind IN ('r', 'i')`,
    );
    await client.end();
    for (const row of rows) byTable.set(row.name, Number(row.bytes));
    return byTable;
  }
  const db = new Database(target, { readonly: true });
  const rows = db.prepare('SELECT name, sum(pgsize) AS bytes FROM dbstat GROUP BY name').all() as { name: string; bytes: number }[];
  db.close();
  for (const row of rows) byTable.set(row.name, row.bytes);
  return byTable;
}

/** "events 212 B, events_by_actor 60 B, ..." per event, the largest first, and the total. */
function perEvent(byTable: Map<string, number>, events: number): { text: string; total: number } {
  const shares = [...byTable].filter(([, bytes]) => bytes / events >= 1).sort((a, b) => b[1] - a[1]);
  const total = [...byTable.values()].reduce((a, b) => a + b, 0) / events;
  return { text: shares.map(([name, bytes]) => `${name} ${(bytes / events).toFixed(0)} B`).join(', '), total };
}

type Started = { port: number; child: ReturnType<typeof startService>; target: string };

/** The service on a fresh copy of a log, signing, once it answers. */
async function serve(log: Sized, dir: string, name: string): Promise<Started> {
  const target = await log.copy(name);
  const port = await freePort();
  const child = startService({
    PORT: String(port),
    HOST: '127.0.0.1',
    INVENTORY_DB: target,
    LOG_LEVEL: 'warn',
    INVENTORY_SIGNING_KEY: join(dir, `${name}-key.pem`),
  });
  await ready(port, '/healthz');
  return { port, child, target };
}

const line = (name: string, r: Load) => console.log(loadLine(`  ${name}`, r, 48));

/** The rows of one store: its logs grown to each size, then measured. */
async function storeRows(store: string, logs: Sized[], dir: string, seconds: number): Promise<LogRow[]> {
  const patches = logs.map((): Load[] => []);
  const gets = logs.map((): Load[] => []);
  for (let round = 0; round < ROUNDS; round++) {
    for (let k = 0; k < logs.length; k++) {
      const i = (k + round) % logs.length;
      const log = logs[i]!;
      const service = await serve(log, dir, `run_${log.events}_${round}`);
      try {
        const patch = await measure(service.port, 'patch', seconds, 50, log.key, PETS);
        const get = await measure(service.port, 'get', seconds, 50, log.key, PETS);
        patches[i]!.push(patch);
        gets[i]!.push(get);
        line(`round ${round + 1}, ${log.events} events, PATCH`, patch);
        line(`round ${round + 1}, ${log.events} events, GET`, get);
      } finally {
        await stop(service.child);
        await log.discard(service.target);
      }
    }
  }
  const rows: LogRow[] = [];
  const rate = (i: number) => median(patches[i]!.map((r) => r.requests.average));
  const patchP99 = (i: number) => median(patches[i]!.map((r) => r.latency.p99));
  const getP99 = (i: number) => median(gets[i]!.map((r) => r.latency.p99));
  for (const [i, log] of logs.entries()) {
    const at = `${store}, ${log.events.toLocaleString('en')} events`;
    rows.push({ name: `${at}: PATCH/s (median of ${ROUNDS})`, measured: `${rate(i).toFixed(0)} req/s`, target: '(measured)', met: true });
    rows.push({ name: `${at}: PATCH p99`, measured: `${patchP99(i)} ms`, target: '(measured)', met: true });
    rows.push({ name: `${at}: GET p99`, measured: `${getP99(i)} ms`, target: '(measured)', met: true });
    const service = await serve(log, dir, `proofs_${log.events}`);
    try {
      rows.push(...(await proofP99s(service.port, log.key, log.events, `${store}: `)));
      const monitor = await monitorRun(service.port, log.key, dir, `${store}: `);
      monitor.proxy.close();
      rows.push(...monitor.rows);
    } finally {
      await stop(service.child);
    }
    const rebuilt = await timedScript('rebuild-projection', 'scripts/rebuild-projection', ['--db', service.target], log.key);
    await log.discard(service.target);
    console.log(`  rebuild-projection at ${log.events} events: ${(rebuilt.ms / 1000).toFixed(1)} s`);
    rows.push({ name: `${at}: rebuild-projection`, measured: `${(rebuilt.ms / 1000).toFixed(1)} s`, target: '(measured)', met: true });
    const disk = perEvent(await bytesByTable(log.target), log.events);
    console.log(`  bytes on disk per event at ${log.events} events: ${disk.total.toFixed(0)} B (${disk.text})`);
    rows.push({ name: `${at}: bytes on disk per event`, measured: `${disk.total.toFixed(0)} B`, target: '(measured)', met: true });
  }
  const last = logs.length - 1;
  const rateRatio = rate(last) / rate(0);
  const p99Ratio = getP99(last) / getP99(0);
  const from = `${logs[last]!.events.toLocaleString('en')} / ${logs[0]!.events.toLocaleString('en')} events`;
  rows.push({
    name: `${store} PATCH/s, ${from}`,
    measured: `${rateRatio.toFixed(2)}x`,
    target: `>= ${1 - FLAT}x`,
    met: rateRatio >= 1 - FLAT,
  });
  rows.push({
    name: `${store} GET p99, ${from}`,
    measured: `${p99Ratio.toFixed(2)}x`,
    target: `<= ${1 + FLAT}x`,
    met: p99Ratio <= 1 + FLAT,
  });
  return rows;
}

/** SQLite at each of sizes; PostgreSQL, when given a server, at the first size and at
 * its largest. */
export async function growthRows(
  dir: string,
  seconds: number,
  sizes: number[],
  postgres?: { url: string; largest: number },
): Promise<LogRow[]> {
  const rows: LogRow[] = [];
  const db = join(dir, 'growth.db');
  const key = await makeDatabase(db, PETS);
  const logs: Sized[] = [];
  for (const events of sizes) {
    const started = performance.now();
    await growTo(db, events);
    const kept = join(dir, `growth-${events}.db`);
    copyFileSync(db, kept);
    console.log(
      `SQLite log grown to ${events} events in ${((performance.now() - started) / 1000).toFixed(1)} s (${(statSync(kept).size / 1e6).toFixed(0)} MB)`,
    );
    logs.push({
      events,
      target: kept,
      key,
      copy: (name) => {
        const path = join(dir, `${name}.db`);
        copyFileSync(kept, path);
        return Promise.resolve(path);
      },
      discard: (path) => {
        for (const file of [path, `${path}-wal`, `${path}-shm`]) rmSync(file, { force: true });
        return Promise.resolve();
      },
    });
  }
  rows.push(...(await storeRows('SQLite', logs, dir, seconds)));
  if (!postgres) return rows;
  const pgLogs: Sized[] = [];
  for (const events of [sizes[0]!, postgres.largest]) {
    const name = `growth_${events}`;
    const url = await createDatabase(postgres.url, name);
    const pgKey = await makeDatabase(url, PETS);
    const started = performance.now();
    await growTo(url, events);
    console.log(`PostgreSQL log grown to ${events} events in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    pgLogs.push({
      events,
      target: url,
      key: pgKey,
      copy: (copy) => createDatabase(postgres.url, copy, name),
      discard: (copy) => dropDatabase(postgres.url, new URL(copy).pathname.slice(1)),
    });
  }
  rows.push(...(await storeRows('PostgreSQL', pgLogs, dir, seconds)));
  return rows;
}
