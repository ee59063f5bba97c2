// Where the service's CPU goes, per request and by stage, on each store: the service
// (1,000 pets) on SQLite, then on PostgreSQL (an embedded server of its own, fsync on),
// under GET and then PATCH load at 50 connections, profiled with node --cpu-prof (every
// thread: the main one and the SQLite writer), and the samples taken during the measured
// load (not the start, not the warm-up) summed by the stage their nearest JavaScript
// frame belongs to, divided by the requests served. Prints a Markdown table per store.
//   node --import tsx scripts/profile.ts [SECONDS]     (about two minutes with 10 s)
//   ... [SECONDS] --top N   also the N functions of the main thread with the most samples
//                           of their own (self time) per request, for each run
// The service runs from its source (tsx), so that each frame keeps its file's name.
// The V8 profiler samples wall time on each thread: a thread blocked in a call (the
// writer waiting for its disk sync) counts as busy in that call. So the CPU itself is
// read from the kernel: each thread's user and system time (/proc/<pid>/task/<tid>/stat,
// the worker threads told apart by the names a --require preload gives them, bench/
// name-threads.cjs, the writer being the busiest of them), and on PostgreSQL that of the server processes serving the service's
// sessions, before and after the measured load. On PostgreSQL the bare group commit
// (bench/bare-group-commit-postgres.ts) runs last under the same PATCH load: its own
// CPU and its server processes' per PATCH are the floor of the service's. Linux only;
// the same on Node 20 and 24.
import { readdirSync, readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDatabase, startPostgres } from './embedded-postgres.ts';
import { freePort, makeDatabase } from './bench/fixtures.ts';
import { children, cpuMicros, load, ready, start, stop, WARMUP_SECONDS, type Mode } from './bench/harness.ts';
import { serverCpuNow, serverCpuSince } from './bench/server-cpu.ts';
import { scriptArgs } from './script-args.ts';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

const args = scriptArgs(import.meta.url, { top: { type: 'string', default: '0' } }, 1);
const SECONDS = Number(args.positionals[0] ?? 10);
const TOP = Number(args.values.top);
const PETS = 1000;

// A stage is known by where its code lives; the first that matches a frame wins.
const STAGES: [string, (url: string, fn: string) => boolean][] = [
  ['garbage collection, V8 itself', (_u, f) => f === '(garbage collector)' || f === '(program)'],
  [
    'HTTP parsing and socket writes (Node)',
    (u, f) => /^node:(_http|net|stream|internal\/(streams?|net|http))/.test(u) || /^write(v|Buffer|String|Utf8String)$/.test(f),
  ],
  [
    'Koa, its router, compose',
    (u) =>
      /node_modules\/(koa|@koa\/|koa-compose|delegates|statuses|vary|on-finished|ee-first|fresh|type-is|media-typer|mime-types|http-errors|encodeurl|escape-html|accepts|negotiator|content-type|only|destroy|path-to-regexp|debug)/.test(
        u,
      ),
  ],
  [
    'access log (pino)',
    (u) =>
      /node_modules\/(pino|sonic-boom|thread-stream|quick-format|atomic-sleep|safe-stable-stringify)/.test(u) ||
      /src\/(http\/stages\/access-log|support\/logger)\.ts/.test(u),
  ],
  [
    'metrics (prom-client)',
    (u) =>
      /node_modules\/(prom-client|tdigest|bintrees)/.test(u) ||
      /src\/(application\/health\/(metrics|request-durations)|http\/stages\/metrics-observer)/.test(u),
  ],
  [
    'authentication (key hash, cache, change token)',
    (u) =>
      /src\/(http\/stages\/(auth|key-fairness)|application\/access\/|store\/keys|store\/sqlite\/(keys|key-log|database|reads\/key-reads)|store\/postgres\/key-)/.test(
        u,
      ) || /^node:internal\/crypto/.test(u),
  ],
  [
    'body, strict JSON, validation (ajv)',
    (u) =>
      /src\/(http\/input\/(body|validation|operation-input|parameters|text-schemas|accept|idempotency-key)|json\/)/.test(u) ||
      /node_modules\/(ajv|fast-uri|fast-deep-equal|raw-body|co-body|koa-bodyparser|iconv-lite|bytes)/.test(u),
  ],
  ['routes, preconditions, the GET list held in memory', (u) => /src\/(http\/(routes\/|input\/preconditions)|application\/read\/)/.test(u)],
  ['service middleware (errors, request id, Host, OPTIONS, stall guard)', (u) => /src\/http\//.test(u)],
  ['command (decide, evolve, group commit)', (u) => /src\/(domain|application\/write)\//.test(u)],
  [
    "signing: checkpoints, receipts, the signer's state file",
    (u, f) =>
      /src\/(application\/signing|store\/receipts)\//.test(u) ||
      /^node:(fs|internal\/fs)/.test(u) ||
      f === 'openFileHandle' ||
      f === 'rename',
  ],
  [
    'store: statements, hash chain, worker messages',
    (u, f) =>
      /src\/(store\/|support\/merkle)/.test(u) ||
      /node_modules\/(better-sqlite3|pg|pg-protocol|pg-types|pg-pool|postgres-)/.test(u) ||
      /^node:internal\/worker/.test(u) ||
      f === 'postMessage',
  ],
  [
    'promises, events, timers',
    (u, f) =>
      /^node:(events|timers|internal\/(process\/task_queues|timers|async_hooks|event_target|process\/promises))/.test(u) ||
      f === 'runMicrotasks',
  ],
];

function stageOf(nodes: Map<number, ProfileNode>, parent: Map<number, number>, id: number): string {
  for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
    const { url, functionName } = nodes.get(at)!.callFrame;
    for (const [name, test] of STAGES) if (test(url, functionName)) return name;
    if (url !== '') return 'other';
  }
  return 'other';
}

/** µs per request by stage, for the samples between from and to (µs, monotonic clock). */
function byStage(profile: Profile, from: number, to: number, requests: number): Map<string, number> {
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const sums = new Map<string, number>();
  let t = profile.startTime;
  profile.samples.forEach((id, i) => {
    const delta = profile.timeDeltas[i] ?? 0;
    t += delta;
    if (t < from || t > to || nodes.get(id)!.callFrame.functionName === '(idle)') return;
    const stage = stageOf(nodes, parent, id);
    sums.set(stage, (sums.get(stage) ?? 0) + delta);
  });
  return new Map([...sums].map(([stage, us]) => [stage, us / requests]));
}

/** µs per request of each function's own samples (not its callees'), by "function file:line", the largest first. */
function selfTimes(profile: Profile, from: number, to: number, requests: number): [string, number][] {
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const sums = new Map<string, number>();
  let t = profile.startTime;
  profile.samples.forEach((id, i) => {
    const delta = profile.timeDeltas[i] ?? 0;
    t += delta;
    const { functionName, url, lineNumber } = nodes.get(id)!.callFrame as ProfileNode['callFrame'] & { lineNumber: number };
    if (t < from || t > to || functionName === '(idle)') return;
    const where = `${functionName || '(anonymous)'} ${url.replace(/^file:\/\/.*?\/(src|node_modules)\//, '$1/')}:${lineNumber + 1}`;
    sums.set(where, (sums.get(where) ?? 0) + delta);
  });
  return [...sums].map(([where, us]): [string, number] => [where, us / requests]).sort((a, b) => b[1] - a[1]);
}

/** The CPU of the service's main thread, of each of its worker threads (by thread id)
 * and, on PostgreSQL, of the server processes serving it. */
async function cpuNow(pid: number, url?: string): Promise<{ main: number; workers: Map<string, number>; server?: Map<number, number> }> {
  const workers = new Map<string, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    if (readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').startsWith('worker-'))
      workers.set(tid, cpuMicros(`/proc/${pid}/task/${tid}/stat`));
  }
  const result = { main: cpuMicros(`/proc/${pid}/task/${pid}/stat`), workers };
  return url === undefined ? result : { ...result, server: await serverCpuNow(url) };
}

/** The CPU the busiest worker thread spent between two readings: on SQLite, the writer
 * (the others are the signing thread and, from source, tsx's loader). */
function busiestWorker(before: Map<string, number>, after: Map<string, number>): number | undefined {
  const spent = [...after].map(([tid, us]) => us - (before.get(tid) ?? 0));
  return spent.length === 0 ? undefined : Math.max(...spent);
}

interface Run {
  main: Map<string, number>;
  writer: Map<string, number>;
  /** The main thread's functions by self time (--top). */
  top: [string, number][];
  rps: number;
  /** Kernel CPU µs per request: main thread, writer thread (SQLite), PostgreSQL server processes. */
  cpu: { main: number; writer?: number; server?: number };
}

async function profileUnder(mode: Mode, target: string): Promise<Run> {
  const dir = mkdtempSync(join(tmpdir(), 'profile-'));
  try {
    const url = target.startsWith('postgres') ? target : undefined;
    const db = url ?? join(dir, 'inventory.db');
    const key = await makeDatabase(db, PETS);
    const port = await freePort();
    const service = start(
      ['--require', join(import.meta.dirname, 'bench/name-threads.cjs'), `--cpu-prof`, `--cpu-prof-dir=${dir}`, 'src/server.ts'],
      {
        PORT: String(port),
        HOST: '127.0.0.1',
        INVENTORY_DB: db,
        LOG_LEVEL: 'info',
      },
    );
    await ready(port, '/healthz');
    await load(port, mode, WARMUP_SECONDS, 50, key, PETS);
    const before = await cpuNow(service.pid!, url);
    // The profiler's clock is the monotonic one, as process.hrtime's: the same in every process.
    const from = Number(process.hrtime.bigint() / 1000n);
    const result = await load(port, mode, SECONDS, 50, key, PETS);
    const to = Number(process.hrtime.bigint() / 1000n);
    const after = await cpuNow(service.pid!, url);
    await stop(service);
    const served = result['2xx'];
    const serverCpu = after.server && serverCpuSince(before.server!, after.server) / served;
    const cpu = {
      main: (after.main - before.main) / served,
      ...(url !== undefined ? {} : { writer: (busiestWorker(before.workers, after.workers) ?? 0) / served }),
      ...(serverCpu === undefined ? {} : { server: serverCpu }),
    };
    // CPU.<date>.<time>.<pid>.<thread>.<n>.cpuprofile: thread 0 is the main one.
    const thread = (f: string) => Number(f.split('.')[4]);
    const profiles = readdirSync(dir)
      .filter((f) => f.endsWith('.cpuprofile'))
      .sort((a, b) => thread(a) - thread(b))
      .map((f) => JSON.parse(readFileSync(join(dir, f), 'utf8')) as Profile);
    const stages = profiles.map((p) => byStage(p, from, to, served));
    const total = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);
    // Of the other threads (tsx's loader, the writer), the busiest is the writer.
    const [main, ...others] = stages;
    const writer = others.sort((a, b) => total(b) - total(a))[0] ?? new Map<string, number>();
    return { main: main!, writer, rps: result.requests.average, cpu, top: selfTimes(profiles[0]!, from, to, served).slice(0, TOP) };
  } finally {
    for (const child of children) child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The bare group commit on PostgreSQL (one transaction per batch) under the PATCH load:
 * requests a second, and CPU µs per PATCH of its process and of the server processes
 * serving it, the floor of the service's. */
async function bareGroupCommit(url: string): Promise<{ rps: number; main: number; server: number }> {
  const key = await makeDatabase(url, PETS);
  const port = await freePort();
  const bare = start(['scripts/bench/bare-group-commit-postgres.ts', String(port), url]);
  try {
    await ready(port);
    await load(port, 'patch', WARMUP_SECONDS, 50, key, PETS);
    const before = await cpuNow(bare.pid!, url);
    const result = await load(port, 'patch', SECONDS, 50, key, PETS);
    const after = await cpuNow(bare.pid!, url);
    const served = result['2xx'];
    const server = serverCpuSince(before.server!, after.server!);
    return { rps: result.requests.average, main: (after.main - before.main) / served, server: server / served };
  } finally {
    await stop(bare);
  }
}

const stages = [...STAGES.map(([name]) => name), 'other'];
const cell = (m: Map<string, number>, s: string) => (m.get(s) ?? 0).toFixed(1);
const sum = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0).toFixed(1);
const us = (n: number | undefined) => (n === undefined ? 'n/a' : n.toFixed(1));

function table(store: string, get: Run, patch: Run): void {
  const sqlite = store === 'SQLite';
  console.log(`\nCPU profile, ${store}, ${PETS} pets, 50 connections, ${SECONDS} s each; node ${process.version}`);
  console.log(`GET ${get.rps.toFixed(0)} req/s, PATCH ${patch.rps.toFixed(0)} req/s while profiled\n`);
  console.log(
    `| stage (µs per request) | GET, main thread | PATCH, main thread |${sqlite ? ' PATCH, writer thread (busy or blocked) |' : ''}`,
  );
  console.log(`|---|---|---|${sqlite ? '---|' : ''}`);
  for (const s of stages) {
    if ([get.main, patch.main, ...(sqlite ? [patch.writer] : [])].every((m) => (m.get(s) ?? 0) < 0.05)) continue;
    console.log(`| ${s} | ${cell(get.main, s)} | ${cell(patch.main, s)} |${sqlite ? ` ${cell(patch.writer, s)} |` : ''}`);
  }
  console.log(
    `| **all (profiler samples)** | **${sum(get.main)}** | **${sum(patch.main)}** |${sqlite ? ` **${sum(patch.writer)}** |` : ''}`,
  );
  console.log(
    `| **CPU (kernel: user + system)** | **${us(get.cpu.main)}** | **${us(patch.cpu.main)}** |${sqlite ? ` **${us(patch.cpu.writer)}** |` : ''}`,
  );
  for (const [name, run] of [
    ['GET', get],
    ['PATCH', patch],
  ] as const) {
    if (run.top.length === 0) continue;
    console.log(`\n${store}, ${name}, main thread: the ${run.top.length} functions with the most self time (µs per request)`);
    for (const [where, us] of run.top) console.log(`${us.toFixed(2).padStart(8)}  ${where}`);
  }
  if (!sqlite) {
    console.log(
      `\nPostgreSQL server processes serving the service, CPU per request: GET ${us(get.cpu.server)} µs, PATCH ${us(patch.cpu.server)} µs`,
    );
  }
}

const sqliteGet = await profileUnder('get', 'sqlite');
const sqlitePatch = await profileUnder('patch', 'sqlite');
table('SQLite', sqliteGet, sqlitePatch);
const postgres = await startPostgres('profile');
try {
  const get = await profileUnder('get', await createDatabase(postgres.url, 'profile_get'));
  const patch = await profileUnder('patch', await createDatabase(postgres.url, 'profile_patch'));
  table('PostgreSQL', get, patch);
  const bare = await bareGroupCommit(await createDatabase(postgres.url, 'profile_bare'));
  console.log(
    `The bare group commit (one transaction per batch) under the same PATCH load: ${bare.rps.toFixed(0)} req/s; CPU per PATCH: ` +
      `its process ${us(bare.main)} µs, the PostgreSQL server processes serving it ${us(bare.server)} µs ` +
      `(the service's: ${us(patch.cpu.server)} µs, ${((patch.cpu.server ?? 0) / bare.server).toFixed(2)}x)`,
  );
} finally {
  await postgres.stop();
}
