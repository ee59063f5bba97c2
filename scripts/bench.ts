// npm run bench — the service against the limits of this machine, in one run.
// Starts, each as its own process on 127.0.0.1: the service (as npm start runs it), a
// bare node:http server sending the same GET bytes precomputed, the Koa floor (Koa and
// @koa/router sending those bytes after a bearer check), a bare node:http server doing
// one durable transaction per PATCH and one doing group commit (the PATCHes of one
// event-loop turn in one transaction); drives each with autocannon (also its own
// process) for a fixed time, after a short warm-up, with /healthz probed 100 times a
// second beside the PATCH load and /metrics scraped once a second beside a mix, and the
// GET again on a service with CORS_ORIGINS set, sent with a browser's Origin (the four
// GETs in three alternated rounds, each one's median kept). Then the
// same on PostgreSQL (an embedded server started for the run, fsync on): the service
// (its GET alternated with the Koa floor started again beside it), a
// bare server doing one transaction per PATCH that locks the chain head, a bare group
// commit (one transaction per batch), and two service instances on one database. The SQLite GET and PATCH loads run again beside 300 change
// feed streams. Last, on each store, a fresh service with 100,000 pets under 10 clients
// reading the list, and another under a user's mix (600 PATCHes each followed by a GET of
// the whole list), reading each one's RSS idle, steady and at its peak (bench/memory.ts). Prints requests/s, p50 and p99 latency, errors, every ratio to
// the limits, the targets (measured, target, met or missed) and the load average before
// and after; writes them all to bench-results/bench.json. Last, 300 clients reading that
// list together right after a PATCH, with /healthz probed beside them (its p99 is a
// target). About seven minutes; the readers' row adds under one.
//   npm run bench [-- --seconds N]
//   npm run bench -- --only many-readers   that last row alone (a minute or two)
//   npm run bench -- --only floors   the rows against the bare servers alone (GET, PATCH,
//                                    both stores, memory, the readers; about seven minutes)
//   npm run bench -- --only flood   one key's 2,000 proofs at once beside /healthz and another key
//   npm run bench -- --only growth   PATCH, GET, proofs, the monitor, rebuild-projection and the
//                                    bytes on disk as one log grows to 10,000,000 events (bench/growth.ts;
//                                    BENCH_GROWTH_SIZES=10000,100000 for a short run)
//   npm run bench -- --only memory   RSS idle, steady and at its peak, 100,000 pets, both stores
//   npm run bench -- --only log   the verifiable log's rows alone (bench/log.ts; a few minutes:
//                                 it builds a log of 1,000,000 events)
//   BENCH_WARMUP_SECONDS=1 npm run bench -- --seconds 1   checks that every part runs
//                                                        (figures that mean nothing)
//   npm run bench -- --baseline REF   the service against itself at git REF instead
//                                     (alternating rounds; see bench/baseline.ts)
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest, type ClientRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compareWithBaseline } from './bench/baseline.ts';
import { scriptArgs } from './script-args.ts';
import { createDatabase, startPostgres } from './embedded-postgres.ts';
import { freePort, makeDatabase } from './bench/fixtures.ts';
import { quantile, readersRound } from './bench/many-readers.ts';
import { atScale, receiptsCost } from './bench/log.ts';
import { oneKeyFlood } from './bench/flood.ts';
import { growthRows } from './bench/growth.ts';
import { MEMORY_PETS, memoryRuns, memoryTarget, type MemoryRun } from './bench/memory.ts';
import {
  children,
  measure,
  ready,
  start,
  startService,
  BENCH_ORIGIN,
  stop,
  WARMUP_SECONDS,
  load,
  loadAverage,
  loadLine,
  type Load,
  type Mode,
} from './bench/harness.ts';

const { values } = scriptArgs(import.meta.url, {
  seconds: { type: 'string', default: '10' },
  baseline: { type: 'string' },
  only: { type: 'string' },
});
const SECONDS = Number(values.seconds);
const ROOT = new URL('..', import.meta.url).pathname;
/** Rounds of the GETs and their floors (alternated): five, so that the median a target
 * is judged by lies past two slow stretches of a shared machine, not one. */
const GET_ROUNDS = 5;
/** Rounds of the receipts' cost and its floor (alternated). */
const ROUNDS = 3;
/** Change feed streams held open beside the GET and PATCH loads. */
const FEED_STREAMS = 300;

const dir = mkdtempSync(join(tmpdir(), 'bench-'));
try {
  if (values.baseline !== undefined) await compareWithBaseline({ ref: values.baseline, root: ROOT, dir, seconds: SECONDS });
  else if (values.only === 'many-readers') {
    console.log(`load average before: ${loadAverage()}`);
    const key = await makeDatabase(join(dir, 'readers.db'), 100_000);
    const row = await manyReaders(join(dir, 'readers.db'), key);
    console.log(`${row.name.padEnd(54)} ${row.measured.padStart(10)}  ${row.target.padStart(10)}  ${row.met ? 'met' : 'MISSED'}`);
    console.log(`load average after: ${loadAverage()}`);
  } else if (values.only === 'floors') await againstBareServers();
  else if (values.only === 'log') await logRows();
  else if (values.only === 'flood') await floodRows();
  else if (values.only === 'growth') await growthRowsOfBoth();
  else if (values.only === 'memory') await memoryRowsOfBoth();
  else if (values.only !== undefined)
    throw new Error(`--only takes many-readers, floors, log, flood, growth or memory, not ${values.only}`);
  else {
    await againstBareServers();
    await idempotencyKeyCost();
    await logRows();
    await floodRows();
    await growthRowsOfBoth();
  }
} finally {
  for (const child of children) child.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
}

interface Target {
  name: string;
  measured: string;
  target: string;
  ratio?: number;
  met: boolean;
  /** What the same measure gives a bare server under the same load: the machine's share. */
  floor?: string;
}

async function againstBareServers(): Promise<void> {
  const PETS = 1000;
  const began = Date.now();
  console.log(`npm run bench: ${SECONDS} s per run after a ${WARMUP_SECONDS} s warm-up, node ${process.version}, 127.0.0.1 only`);
  const loadBefore = loadAverage();
  console.log(`load average before: ${loadBefore}`);
  const results: Record<string, Load> = {};
  const report = (name: string, r: Load, extra = '') => {
    results[name] = r;
    console.log(`${loadLine(name, r)}${extra}`);
    return r;
  };
  const run = async (name: string, port: number, mode: Mode, connections: number, key: string) =>
    report(name, await measure(port, mode, SECONDS, connections, key, PETS));
  /** Loads at 50 connections in GET_ROUNDS rounds, each round starting one further along the
   * list; each one's median round, reported as such. */
  const alternated = async <T extends readonly { name: string; port: number; mode: Mode; key: string }[]>(
    loads: T,
  ): Promise<{ [K in keyof T]: Load }> => {
    const rounds: Load[][] = loads.map(() => []);
    for (let round = 0; round < GET_ROUNDS; round++) {
      for (let k = 0; k < loads.length; k++) {
        const i = (k + round) % loads.length;
        const { port, mode, key: bearer } = loads[i]!;
        const measured = await measure(port, mode, SECONDS, 50, bearer, PETS);
        rounds[i]!.push(measured);
        // Each round as it ends: how far apart one load's rounds lie shows how much of a
        // ratio's distance from its target this machine's stretches could account for.
        console.log(`  round ${round + 1}: ${loads[i]!.name.padEnd(62)} ${measured.requests.average.toFixed(0).padStart(7)} req/s`);
      }
    }
    return loads.map(({ name }, i) => {
      const sorted = [...rounds[i]!].sort((a, b) => a.requests.average - b.requests.average);
      const spread = `  (rounds ${sorted[0]!.requests.average.toFixed(0)}-${sorted.at(-1)!.requests.average.toFixed(0)} req/s)`;
      return report(`${name} (median of ${GET_ROUNDS})`, sorted[Math.floor(GET_ROUNDS / 2)]!, spread);
    }) as { [K in keyof T]: Load };
  };
  /** A load, with a probe (or a scraper) running beside its measured part. */
  const runBeside = async (name: string, port: number, mode: Mode, key: string, probe: 'healthz' | 'metrics') => {
    await load(port, mode, WARMUP_SECONDS, 50, key, PETS);
    const [main, side] = await Promise.all([load(port, mode, SECONDS, 50, key, PETS), load(port, probe, SECONDS, 1, key, PETS)]);
    report(name, main);
    return report(`  beside it: GET /${probe} ${probe === 'healthz' ? '100' : 'once'} a second`, side);
  };

  // SQLite: the service, a bare server sending the same GET bytes, the Koa floor, a bare
  // server doing one durable transaction per PATCH, a bare group commit.
  const key = await makeDatabase(join(dir, 'service.db'), PETS);
  await makeDatabase(join(dir, 'bare.db'), PETS);
  await makeDatabase(join(dir, 'group.db'), PETS);
  const corsKey = await makeDatabase(join(dir, 'cors.db'), PETS);
  const servicePort = await freePort();
  const service = startService({
    PORT: String(servicePort),
    HOST: '127.0.0.1',
    INVENTORY_DB: join(dir, 'service.db'),
    LOG_LEVEL: 'info',
    // Room for the idle change feed streams opened below, all with the bench's one key
    // (each is a request in flight too), beside the loads' connections.
    FEED_MAX_STREAMS: String(FEED_STREAMS),
    FEED_MAX_STREAMS_PER_KEY: String(FEED_STREAMS),
    MAX_REQUESTS_PER_KEY: String(FEED_STREAMS + 100),
  });
  await ready(servicePort, '/healthz');
  const body = Buffer.from(
    await (await fetch(`http://127.0.0.1:${servicePort}/v1/inventory`, { headers: { authorization: `Bearer ${key}` } })).arrayBuffer(),
  );
  writeFileSync(join(dir, 'body.json'), body);
  const bareGetPort = await freePort();
  const bareGet = start(['scripts/bench/bare-get.ts', String(bareGetPort), join(dir, 'body.json')]);
  const barePatchPort = await freePort();
  const barePatch = start(['scripts/bench/bare-patch.ts', String(barePatchPort), join(dir, 'bare.db')]);
  const koaPort = await freePort();
  const koaGet = start(['scripts/bench/koa-get.ts', String(koaPort), join(dir, 'body.json'), key]);
  const groupPort = await freePort();
  const group = start(['scripts/bench/bare-group-commit.ts', String(groupPort), join(dir, 'group.db')]);
  await Promise.all([ready(bareGetPort), ready(barePatchPort), ready(koaPort), ready(groupPort)]);

  // A deployment with a browser front end: CORS_ORIGINS set, and the Origin every
  // cross-origin GET of a browser carries.
  const corsPort = await freePort();
  const corsService = startService({
    PORT: String(corsPort),
    HOST: '127.0.0.1',
    INVENTORY_DB: join(dir, 'cors.db'),
    LOG_LEVEL: 'info',
    CORS_ORIGINS: BENCH_ORIGIN,
  });
  await ready(corsPort, '/healthz');
  // The GETs and their floors in rounds, each round in another order, each one's median
  // round kept: a slow stretch of a shared machine then falls on each of them alike, not
  // on whichever runs first.
  const [sGet, bGet, kGet, sGetCors] = await alternated([
    { name: `SQLite: service GET, ${PETS} pets, 50 conn.`, port: servicePort, mode: 'get', key },
    { name: 'SQLite: bare GET, same bytes precomputed', port: bareGetPort, mode: 'get', key },
    { name: 'Koa floor: Koa + router, same bytes, bearer check', port: koaPort, mode: 'get', key },
    { name: 'SQLite: service GET, CORS_ORIGINS set, Origin sent', port: corsPort, mode: 'get-cors', key: corsKey },
  ] as const);
  await stop(corsService);
  const sPatch = await runBeside(`SQLite: service PATCH over ${PETS} pets, 50 conn.`, servicePort, 'patch', key, 'healthz');
  const sPatchRun = results[`SQLite: service PATCH over ${PETS} pets, 50 conn.`]!;
  const bPatch = await run('SQLite: bare PATCH, 1 durable tx per request', barePatchPort, 'patch', 50, key);
  const gHealthz = await runBeside('SQLite: bare group commit, 1 durable tx per turn', groupPort, 'patch', key, 'healthz');
  const gPatch = results['SQLite: bare group commit, 1 durable tx per turn']!;
  // The fan-out floor: the bare group commit sending each batch's events to 300 streams.
  const gFeed = await openFeedStreams(groupPort, key, FEED_STREAMS, 0);
  const gPatchFeed = await run(`SQLite: bare group commit, ${FEED_STREAMS} feed streams open`, groupPort, 'patch', 50, key);
  console.log(`  the streams took ${gFeed.events()} events; ${gFeed.open()} of ${FEED_STREAMS} still open`);
  gFeed.close();
  const sMix = await run('SQLite: service 90/10 GET/PATCH mix, 50 conn.', servicePort, 'mix', 50, key);
  await runBeside('SQLite: service 90/10 mix, scraped', servicePort, 'mix', key, 'metrics');
  const scraped = results['SQLite: service 90/10 mix, scraped']!;
  // The same GET and PATCH loads with 300 change feed streams open, their readers taking
  // every event (each PATCH's event goes to all 300).
  const feed = await openFeedStreams(servicePort, key, FEED_STREAMS);
  const sGetFeed = await run(`SQLite: service GET, ${FEED_STREAMS} feed streams open`, servicePort, 'get', 50, key);
  const sPatchFeed = await run(`SQLite: service PATCH, ${FEED_STREAMS} feed streams open`, servicePort, 'patch', 50, key);
  console.log(`  the streams took ${feed.events()} events; ${feed.open()} of ${FEED_STREAMS} still open`);
  feed.close();
  await Promise.all([stop(service), stop(bareGet), stop(barePatch), stop(koaGet), stop(group)]);

  // PostgreSQL, on an embedded server of this run's own (fsync on): the service, a bare
  // server doing one transaction per PATCH that takes the chain-head lock, and two
  // service instances on one database; and a bare group commit.
  const postgres = await startPostgres('bench');
  let pgMemory: MemoryRun[];
  let pg: { get: Load; floor: Load; patch: Load; healthz: Load; bare: Load; group: Load; groupHealthz: Load; two: Load };
  try {
    const url = await createDatabase(postgres.url, 'bench');
    const bareUrl = await createDatabase(postgres.url, 'bench_bare');
    const groupUrl = await createDatabase(postgres.url, 'bench_group');
    const pgKey = await makeDatabase(url, PETS);
    await makeDatabase(bareUrl, PETS);
    await makeDatabase(groupUrl, PETS);
    const ports = [await freePort(), await freePort()];
    const pgServices = ports.map((port) => startService({ PORT: String(port), HOST: '127.0.0.1', INVENTORY_DB: url, LOG_LEVEL: 'info' }));
    const barePgPort = await freePort();
    const barePg = start(['scripts/bench/bare-patch-postgres.ts', String(barePgPort), bareUrl]);
    const groupPgPort = await freePort();
    const groupPg = start(['scripts/bench/bare-group-commit-postgres.ts', String(groupPgPort), groupUrl]);
    // The Koa floor again, beside this phase's GET: a floor measured minutes earlier
    // would meet another stretch of this machine (and other processes: the PostgreSQL
    // server's).
    const koaPgPort = await freePort();
    const koaPg = start(['scripts/bench/koa-get.ts', String(koaPgPort), join(dir, 'body.json'), pgKey]);
    await Promise.all([...ports.map((p) => ready(p, '/healthz')), ready(barePgPort), ready(groupPgPort), ready(koaPgPort)]);
    const [get, floor] = await alternated([
      { name: `PostgreSQL: service GET, ${PETS} pets, 50 conn.`, port: ports[0]!, mode: 'get', key: pgKey },
      { name: 'Koa floor, beside PostgreSQL', port: koaPgPort, mode: 'get', key: pgKey },
    ] as const);
    await stop(koaPg);
    const healthz = await runBeside(`PostgreSQL: service PATCH, ${PETS} pets, 50 conn.`, ports[0]!, 'patch', pgKey, 'healthz');
    const patch = results[`PostgreSQL: service PATCH, ${PETS} pets, 50 conn.`]!;
    await run('PostgreSQL: service 90/10 mix, 50 conn.', ports[0]!, 'mix', 50, pgKey);
    const bare = await run('PostgreSQL: bare PATCH, 1 tx per request, head locked', barePgPort, 'patch', 50, pgKey);
    const groupHealthz = await runBeside('PostgreSQL: bare group commit, 1 tx per batch', groupPgPort, 'patch', pgKey, 'healthz');
    const pgGroup = results['PostgreSQL: bare group commit, 1 tx per batch']!;
    // Two instances, 25 connections each, at the same time: the sum against one instance.
    await Promise.all(ports.map((port) => load(port, 'patch', WARMUP_SECONDS, 25, pgKey, PETS)));
    const halves = await Promise.all(ports.map((port) => load(port, 'patch', SECONDS, 25, pgKey, PETS)));
    const two = report('PostgreSQL: two instances, PATCH, 25 conn. each', combine(halves));
    pg = { get, floor, patch, healthz, bare, group: pgGroup, groupHealthz, two };
    await Promise.all([...pgServices.map((s) => stop(s)), stop(barePg), stop(groupPg)]);
    pgMemory = await pgMemoryRuns(postgres.url);
  } finally {
    await postgres.stop();
  }

  // Memory: a fresh service with 100,000 pets under 10 clients, GET alone and a user's mix.
  const bigKey = await makeDatabase(join(dir, 'big.db'), MEMORY_PETS);
  const memory = [...(await memoryRuns('SQLite', join(dir, 'big.db'), bigKey, SECONDS)), ...pgMemory];
  for (const m of memory) results[m.name] = m.load;
  const readers = await manyReaders(join(dir, 'big.db'), bigKey);

  const ratio = (a: Load, b: Load) => a.requests.average / b.requests.average;
  const allClean = Object.values(results).every((r) => r.non2xx === 0 && r.errors === 0 && r.timeouts === 0);
  // Every ratio to a limit: the floors (Koa for GET, group commit for PATCH) and the bare
  // servers of before.
  const ratios: [string, number][] = [
    ['SQLite GET / Koa floor', ratio(sGet, kGet)],
    ['SQLite GET with CORS / Koa floor', ratio(sGetCors, kGet)],
    ['SQLite GET / bare GET', ratio(sGet, bGet)],
    ['Koa floor / bare GET', ratio(kGet, bGet)],
    ['SQLite PATCH / bare group commit', ratio(sPatchRun, gPatch)],
    ['SQLite PATCH / bare per-request', ratio(sPatchRun, bPatch)],
    ['bare group commit / bare per-request (SQLite)', ratio(gPatch, bPatch)],
    [`bare group commit, ${FEED_STREAMS} feed streams / none (SQLite)`, ratio(gPatchFeed, gPatch)],
    ['PostgreSQL GET / Koa floor (beside it)', ratio(pg.get, pg.floor)],
    ['PostgreSQL GET / bare GET', ratio(pg.get, bGet)],
    ['PostgreSQL PATCH / bare group commit', ratio(pg.patch, pg.group)],
    ['PostgreSQL PATCH / bare per-request', ratio(pg.patch, pg.bare)],
    ['bare group commit / bare per-request (PostgreSQL)', ratio(pg.group, pg.bare)],
  ];
  console.log('');
  for (const [name, r] of ratios) console.log(`${name.padEnd(54)} ${r.toFixed(2).padStart(6)}x`);
  const atLeast = (name: string, a: Load, b: Load, min: number): Target => ({
    name,
    measured: `${ratio(a, b).toFixed(2)}x`,
    target: `>= ${Number(min.toFixed(2))}x`,
    ratio: ratio(a, b),
    met: ratio(a, b) >= min,
  });
  const p99AtMost = (name: string, a: Load, b: Load): Target => ({
    name,
    measured: `${a.latency.p99} ms`,
    target: `<= ${b.latency.p99} ms`,
    // A run that answered nothing has no latency to compare.
    met: a['2xx'] > 0 && a.latency.p99 <= b.latency.p99,
  });
  const atMostFloor = (name: string, a: Load, floor: Load): Target => ({
    name,
    measured: `${a.latency.p99} ms`,
    target: `<= ${floor.latency.p99} ms`,
    met: a['2xx'] > 0 && a.latency.p99 <= floor.latency.p99,
    floor: `${floor.latency.p99} ms`,
  });
  const targets: Target[] = [
    atLeast('SQLite GET / Koa floor', sGet, kGet, 0.8),
    atLeast('SQLite GET with CORS / Koa floor', sGetCors, kGet, 0.8),
    atLeast('SQLite PATCH / bare group commit', sPatchRun, gPatch, 0.5),
    p99AtMost('SQLite PATCH p99 (bare per-request server)', sPatchRun, bPatch),
    atLeast('PostgreSQL PATCH / bare group commit', pg.patch, pg.group, 0.5),
    atLeast('PostgreSQL GET / Koa floor', pg.get, pg.floor, 0.8),
    p99AtMost('PostgreSQL PATCH p99 (bare per-request server)', pg.patch, pg.bare),
    ...memory.map(memoryTarget),
    // Beside the PATCH load a probe waits for the machine's two cores as much as for the
    // service: the limit is what the bare group commit's own probe gets under its load.
    atMostFloor('/healthz p99 beside PATCH (SQLite)', sPatch, gHealthz),
    atMostFloor('/healthz p99 beside PATCH (PostgreSQL)', pg.healthz, pg.groupHealthz),
    atLeast('two PostgreSQL instances / one (no contention)', pg.two, pg.patch, 1),
    atLeast('a 1 Hz /metrics scrape (mix scraped / mix)', scraped, sMix, 0.9),
    atLeast(`${FEED_STREAMS} feed streams open: GET / GET`, sGetFeed, sGet, 0.9),
    // Each PATCH's event goes to every stream: the limit is what the same streams cost the
    // bare group commit.
    {
      ...atLeast(`${FEED_STREAMS} feed streams open: PATCH / PATCH`, sPatchFeed, sPatchRun, ratio(gPatchFeed, gPatch)),
      floor: `${ratio(gPatchFeed, gPatch).toFixed(2)}x`,
    },
    { name: 'errors and non-2xx answers in all runs', measured: allClean ? 'none' : 'SOME', target: 'none', met: allClean },
    readers,
  ];
  const loadAfter = loadAverage();
  console.log('');
  console.log(`${'target'.padEnd(54)} ${'measured'.padStart(10)}  ${'required'.padStart(10)}  result  floor`);
  for (const t of targets)
    console.log(
      `${t.name.padEnd(54)} ${t.measured.padStart(10)}  ${t.target.padStart(10)}  ${(t.met ? 'met' : 'MISSED').padEnd(6)}  ${t.floor ?? ''}`,
    );
  console.log('(floor: the same measure on the bare group commit server under the same load)');
  console.log(`load average (1, 5, 15 min) before: ${loadBefore}; after: ${loadAfter}`);
  console.log('(two instances on 2 cores: this shows the absence of contention, not scaling)');
  const seconds = Math.round((Date.now() - began) / 1000);
  console.log(`bench took ${seconds} s; written to bench-results/bench.json`);
  mkdirSync(join(ROOT, 'bench-results'), { recursive: true });
  writeFileSync(
    join(ROOT, 'bench-results', 'bench.json'),
    `${JSON.stringify({ date: new Date().toISOString(), node: process.version, seconds: SECONDS, wallSeconds: seconds, loadAverage: { before: loadBefore, after: loadAfter }, results, ratios: Object.fromEntries(ratios), memory: memory.map(({ name, idleMb, steadyMb, peakMb }) => ({ name, idleMb, steadyMb, peakMb })), targets }, null, 2)}\n`,
  );
}

/**
 * A fresh service on db (100,000 pets) and READERS clients reading the list together right
 * after a PATCH, in READER_ROUNDS rounds, /healthz probed beside them (scripts/bench/many-readers.ts);
 * prints each round and returns the target: the probes' p99 over all rounds.
 */
async function manyReaders(db: string, key: string): Promise<Target> {
  const READERS = 300;
  const READER_ROUNDS = 3;
  const port = await freePort();
  // The readers share the bench's one key: the per-key bound must not refuse them.
  const service = startService({
    PORT: String(port),
    HOST: '127.0.0.1',
    INVENTORY_DB: db,
    LOG_LEVEL: 'info',
    MAX_REQUESTS_PER_KEY: String(READERS + 10),
  });
  const probes: number[] = [];
  let failures = 0;
  try {
    await ready(port, '/healthz');
    for (let round = 1; round <= READER_ROUNDS; round++) {
      const r = await readersRound(port, key, READERS, round);
      probes.push(...r.healthzMs);
      failures += r.failures;
      console.log(
        `SQLite: ${READERS} readers of the list after a PATCH, round ${round}: all read in ${r.readersMs.toFixed(0)} ms; ` +
          `/healthz p50 ${quantile(r.healthzMs, 0.5).toFixed(1)} ms, p99 ${quantile(r.healthzMs, 0.99).toFixed(1)} ms, ` +
          `max ${Math.max(...r.healthzMs).toFixed(1)} ms (${r.healthzMs.length} probes); not 200: ${r.failures}`,
      );
    }
  } finally {
    await stop(service);
  }
  const p99 = quantile(probes, 0.99);
  return {
    name: `/healthz p99 beside ${READERS} readers of 100,000 pets`,
    measured: `${p99.toFixed(0)} ms`,
    target: '<= 100 ms',
    met: p99 <= 100 && failures === 0,
  };
}

/**
 * What Idempotency-Keys cost: PATCH with a fresh key on every request (each answer stored
 * with its event, each key looked up first) against PATCH without one, the same load on
 * the same service, on SQLite and on PostgreSQL. Its own services, databases and
 * PostgreSQL server; prints both rates and their ratio per store and writes them to
 * bench-results/bench-idempotency.json.
 */
async function idempotencyKeyCost(): Promise<void> {
  const PETS = 1000;
  const CONNECTIONS = 50;
  const results: Record<string, Load> = {};
  const lines: string[] = [];
  const compare = async (store: string, port: number, key: string) => {
    const rates: number[] = [];
    for (const mode of ['patch', 'patch-keyed'] as const) {
      const r = await measure(port, mode, SECONDS, CONNECTIONS, key, PETS);
      const name = `${store}: service PATCH${mode === 'patch' ? ', no key' : ', a fresh Idempotency-Key each'}, ${CONNECTIONS} conn.`;
      results[name] = r;
      rates.push(r.requests.average);
      console.log(loadLine(name, r, 64));
    }
    lines.push(`${store}: PATCH with a key / without: ${(rates[1]! / rates[0]!).toFixed(2)}x`);
  };
  const serve = async (db: string) => {
    const port = await freePort();
    const service = startService({ PORT: String(port), HOST: '127.0.0.1', INVENTORY_DB: db, LOG_LEVEL: 'info' });
    await ready(port, '/healthz');
    return { port, service };
  };

  const sqliteKey = await makeDatabase(join(dir, 'idempotency.db'), PETS);
  const sqlite = await serve(join(dir, 'idempotency.db'));
  await compare('SQLite', sqlite.port, sqliteKey);
  await stop(sqlite.service);
  const postgres = await startPostgres('bench-idempotency');
  try {
    const url = await createDatabase(postgres.url, 'bench_idempotency');
    const pgKey = await makeDatabase(url, PETS);
    const pg = await serve(url);
    await compare('PostgreSQL', pg.port, pgKey);
    await stop(pg.service);
  } finally {
    await postgres.stop();
  }
  for (const line of lines) console.log(line);
  mkdirSync(join(ROOT, 'bench-results'), { recursive: true });
  writeFileSync(
    join(ROOT, 'bench-results', 'bench-idempotency.json'),
    `${JSON.stringify({ date: new Date().toISOString(), node: process.version, seconds: SECONDS, results, ratios: lines }, null, 2)}\n`,
  );
}

/**
 * Opens count change feed streams (GET /v1/events as text/event-stream) whose readers take
 * every byte. They start at the log's head: what is measured is live delivery, not 300
 * catch-ups of the whole history the runs before wrote.
 */
async function openFeedStreams(port: number, key: string, count: number, after?: number) {
  let seq = after;
  if (seq === undefined) {
    const head = await fetch(`http://127.0.0.1:${port}/v1/log/head`, { headers: { authorization: `Bearer ${key}` } });
    if (head.status !== 200) throw new Error(`GET /v1/log/head was answered ${head.status}`);
    ({ seq } = (await head.json()) as { seq: number });
  }
  let events = 0;
  let open = 0;
  const requests: ClientRequest[] = [];
  await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<void>((resolve, reject) => {
          const req = httpRequest(
            {
              host: '127.0.0.1',
              port,
              path: `/v1/events?after=${seq}`,
              headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream' },
              agent: false,
            },
            (res) => {
              if (res.statusCode !== 200) reject(new Error(`a feed stream was answered ${res.statusCode}`));
              open++;
              res.setEncoding('utf8');
              res.on('data', (chunk: string) => (events += chunk.split('\nid: ').length - 1));
              res.on('close', () => open--);
              resolve();
            },
          );
          req.on('error', reject);
          req.end();
          requests.push(req);
        }),
    ),
  );
  return { events: () => events, open: () => open, close: () => requests.forEach((req) => req.destroy()) };
}

/** Two loads run side by side, as one: requests summed, the worse latency, counts summed. */
function combine(loads: Load[]): Load {
  return {
    requests: { average: loads.reduce((n, l) => n + l.requests.average, 0) },
    latency: { p50: Math.max(...loads.map((l) => l.latency.p50)), p99: Math.max(...loads.map((l) => l.latency.p99)) },
    errors: loads.reduce((n, l) => n + l.errors, 0),
    timeouts: loads.reduce((n, l) => n + l.timeouts, 0),
    non2xx: loads.reduce((n, l) => n + l.non2xx, 0),
    '2xx': loads.reduce((n, l) => n + l['2xx'], 0),
  };
}

/** The verifiable log's rows (bench/log.ts): receipts' cost, and proofs, the monitor and the migration at 1,000,000 events. */
async function logRows(): Promise<void> {
  console.log(`the verifiable log: load average before: ${loadAverage()}`);
  const rows = [await receiptsCost(dir, SECONDS, ROUNDS), ...(await atScale(dir, Number(process.env.BENCH_LOG_EVENTS ?? 1_000_000)))];
  printRows(rows);
  console.log(`the verifiable log: load average after: ${loadAverage()}`);
}

/** Costs as the log grows: SQLite at BENCH_GROWTH_SIZES events (a comma-separated list;
 * 10,000, 1,000,000 and 10,000,000 unless set), PostgreSQL at the first and at
 * BENCH_GROWTH_POSTGRES (1,000,000 unless set). */
async function growthRowsOfBoth(): Promise<void> {
  console.log(`the log growing: load average before: ${loadAverage()}`);
  const sizes = (process.env.BENCH_GROWTH_SIZES ?? '10000,1000000,10000000').split(',').map(Number);
  const postgres = await startPostgres('bench-growth');
  try {
    printRows(
      await growthRows(dir, SECONDS, sizes, { url: postgres.url, largest: Number(process.env.BENCH_GROWTH_POSTGRES ?? 1_000_000) }),
    );
  } finally {
    await postgres.stop();
  }
  console.log(`the log growing: load average after: ${loadAverage()}`);
}

/** The memory runs on PostgreSQL: a database of MEMORY_PETS pets on the server at url. */
async function pgMemoryRuns(url: string): Promise<MemoryRun[]> {
  const target = await createDatabase(url, 'bench_memory');
  return memoryRuns('PostgreSQL', target, await makeDatabase(target, MEMORY_PETS), SECONDS);
}

/** The memory rows alone, on both stores. */
async function memoryRowsOfBoth(): Promise<void> {
  console.log(`memory: load average before: ${loadAverage()}`);
  const key = await makeDatabase(join(dir, 'big.db'), MEMORY_PETS);
  const runs = await memoryRuns('SQLite', join(dir, 'big.db'), key, SECONDS);
  const postgres = await startPostgres('bench-memory');
  try {
    runs.push(...(await pgMemoryRuns(postgres.url)));
  } finally {
    await postgres.stop();
  }
  printRows(runs.map(memoryTarget));
  console.log(`memory: load average after: ${loadAverage()}`);
}

/** Fair to every key: one key flooding proofs beside /healthz and another key. */
async function floodRows(): Promise<void> {
  console.log(`one key flooding: load average before: ${loadAverage()}`);
  printRows(await oneKeyFlood(dir));
  console.log(`one key flooding: load average after: ${loadAverage()}`);
}

function printRows(rows: readonly { name: string; measured: string; target: string; met: boolean; floor?: string | undefined }[]): void {
  for (const row of rows) {
    console.log(
      `${row.name.padEnd(54)} ${row.measured.padStart(10)}  ${row.target.padStart(10)}  ${row.met ? 'met' : 'MISSED'}${row.floor ? `  (floor ${row.floor})` : ''}`,
    );
  }
}
