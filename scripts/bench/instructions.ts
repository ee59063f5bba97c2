// What a GET costs in instructions, counted by valgrind's callgrind: the service as npm
// start runs it (1,000 pets), the same with CORS_ORIGINS set and a browser's Origin sent,
// the Koa floor of npm run bench and its bare node:http server sending the same bytes.
// Each runs under callgrind, one after the other: a warm-up of 5 x REQUESTS GETs over 50
// connections, then REQUESTS more once the count is on (valgrind translates the code
// again), then WINDOWS windows of REQUESTS GETs, each counted from zero. The event loop's
// thread is counted apart from the others (the JIT's compiler, the garbage collector's
// helpers); the kernel's work is not counted. A time in µs drifts on this shared machine
// within minutes, and two identical processes differ by a few per cent; an instruction
// count of the event loop does not drift, so a change of a few per cent shows.
// Under callgrind a process runs many times slower: what a cache keyed by the clock
// shares (the log's timestamp, made once a millisecond) is shared by fewer requests than
// at full speed, and the JIT compiles later in the run. Linux with valgrind only; the load
// generator (autocannon) is not counted.
//   node --import tsx scripts/bench/instructions.ts [REQUESTS] [WINDOWS]
// The event loop's file of each side's last window is named, for callgrind_annotate.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { freePort, makeDatabase } from './fixtures.ts';
import { BENCH_ORIGIN, loadAverage, median } from './harness.ts';

const [requests = '2000', windows = '5'] = process.argv.slice(2);
const N = Number(requests);
const PETS = 1000;
const ROOT = new URL('../..', import.meta.url).pathname;
const AUTOCANNON = join(ROOT, 'node_modules/.bin/autocannon');

if (spawnSync('valgrind', ['--version']).status !== 0) {
  process.stderr.write('instructions.ts: valgrind is not installed (apt-get install valgrind)\n');
  process.exit(2);
}

interface Side {
  name: string;
  /** What node runs, and its environment besides this one's. */
  args: string[];
  env?: Record<string, string>;
  origin?: boolean;
}

/** GETs of the list over 50 connections, n in all; fails on any answer but 200. */
function gets(port: number, key: string, n: number, origin: boolean): void {
  const headers = ['-H', `authorization=Bearer ${key}`, ...(origin ? ['-H', `origin=${BENCH_ORIGIN}`] : [])];
  const out = execFileSync(AUTOCANNON, ['-c', '50', '-a', String(n), '-j', ...headers, `http://127.0.0.1:${port}/v1/inventory`], {
    stdio: ['ignore', 'pipe', 'ignore'],
    encoding: 'utf8',
  });
  const result = JSON.parse(out) as { '2xx': number; non2xx: number; errors: number };
  if (result['2xx'] !== n || result.non2xx > 0 || result.errors > 0) throw new Error(`GETs: ${out.slice(0, 300)}`);
}

/** The list, once the side answers. */
async function answers(port: number, key: string): Promise<Buffer> {
  for (let tries = 0; ; tries++) {
    try {
      const response = await fetch(`http://127.0.0.1:${port}/v1/inventory`, { headers: { authorization: `Bearer ${key}` } });
      return Buffer.from(await response.arrayBuffer());
    } catch (err) {
      // Under callgrind a start takes long.
      if (tries > 300) throw err;
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
}

/** A dump's instructions, counted per thread (callgrind numbers the dumps from 1 and the
 * threads from 01, the main thread's first): the event loop's, and every thread's
 * (the JIT's compiler and the garbage collector's helpers among them). callgrind writes
 * the files once it sees the request, a moment after callgrind_control returns: they are
 * taken once every one of them ends with its totals and two looks in a row agree. */
async function totals(out: string, dump: number): Promise<{ loop: number; all: number }> {
  const read = (file: string) => Number(/^totals: (\d+)$/m.exec(readFileSync(join(dirname(out), file), 'utf8'))?.[1] ?? NaN);
  const main = `${basename(out)}.${dump}-01`;
  let seen = '';
  for (let tries = 0; ; tries++) {
    const files = readdirSync(dirname(out)).filter((f) => f.startsWith(`${basename(out)}.${dump}-`));
    const counts = files.map(read);
    const now = `${files.join()} ${counts.join()}`;
    if (files.includes(main) && counts.every(Number.isFinite) && now === seen) {
      return { loop: read(main), all: counts.reduce((sum, n) => sum + n, 0) };
    }
    if (tries > 600) throw new Error(`callgrind wrote no ${main}`);
    seen = now;
    await new Promise((r) => setTimeout(r, 200));
  }
}

interface Counts {
  /** Instructions a GET on the event loop's thread, in each window. */
  loop: number[];
  /** On all of the process's threads. */
  all: number[];
}

/** The side's instructions a GET in each window, and the main thread's file of its last window. */
async function count(side: Side, port: number, key: string, dir: string): Promise<Counts & { file: string; body: Buffer }> {
  const out = join(dir, `callgrind.out.${side.name.replace(/\W+/g, '-')}`);
  const env = { ...process.env, ...side.env };
  const child = spawn(
    'valgrind',
    [
      '--tool=callgrind',
      '--instr-atstart=no',
      '--separate-threads=yes',
      '--smc-check=all-non-file',
      `--callgrind-out-file=${out}`,
      process.execPath,
      ...side.args,
    ],
    { cwd: ROOT, env, stdio: 'ignore' },
  );
  try {
    const body = await answers(port, key);
    // vgdb names its pipes after the HOST of the environment, which the service's
    // environment sets to its listening address: callgrind_control is given the same.
    const control = (...args: string[]) => execFileSync('callgrind_control', [...args, String(child.pid)], { env, stdio: 'ignore' });
    gets(port, key, 5 * N, side.origin ?? false);
    control('-i', 'on');
    gets(port, key, N, side.origin ?? false);
    const counts: Counts = { loop: [], all: [] };
    for (let w = 1; w <= Number(windows); w++) {
      control('-z');
      gets(port, key, N, side.origin ?? false);
      control('-d');
      const { loop, all } = await totals(out, w);
      counts.loop.push(loop / N);
      counts.all.push(all / N);
    }
    return { ...counts, file: `${out}.${windows}-01`, body };
  } finally {
    child.kill('SIGKILL');
  }
}

const dir = mkdtempSync(join(tmpdir(), 'instructions-'));
execFileSync(process.execPath, ['scripts/build.mjs'], { cwd: ROOT, stdio: 'ignore' });
console.log(`instructions: ${N} GETs a window, ${windows} windows, 50 connections; load average before: ${loadAverage()}`);
const key = await makeDatabase(join(dir, 'service.db'), PETS);
const corsKey = await makeDatabase(join(dir, 'cors.db'), PETS);
const service = (db: string, cors: boolean): Record<string, string> => ({
  HOST: '127.0.0.1',
  INVENTORY_DB: join(dir, db),
  LOG_LEVEL: 'info',
  ...(cors ? { CORS_ORIGINS: BENCH_ORIGIN } : {}),
});
const sides: (Side & { key: string })[] = [
  { name: 'service', args: ['dist/server.mjs'], env: service('service.db', false), key },
  { name: 'service, CORS, Origin sent', args: ['dist/server.mjs'], env: service('cors.db', true), origin: true, key: corsKey },
  { name: 'Koa floor', args: ['--import', 'tsx', 'scripts/bench/koa-get.ts'], key },
  { name: 'bare node:http, same bytes', args: ['--import', 'tsx', 'scripts/bench/bare-get.ts'], key },
];
const bodyFile = join(dir, 'body.json');
const rows: (Counts & { name: string })[] = [];
const thousands = (values: number[]) => values.map((n) => (n / 1000).toFixed(1)).join(', ');
for (const side of sides) {
  const port = await freePort();
  // The floors send the very bytes of the service's list (the service runs first).
  const args = side.env ? side.args : [...side.args, String(port), bodyFile, ...(side.name === 'Koa floor' ? [key] : [])];
  const { file, body, ...counts } = await count({ ...side, args, env: { ...side.env, PORT: String(port) } }, port, side.key, dir);
  if (side === sides[0]) writeFileSync(bodyFile, body);
  rows.push({ name: side.name, ...counts });
  console.log(`  ${side.name}: event loop ${thousands(counts.loop)}; all threads ${thousands(counts.all)} thousand a GET (${file})`);
}
const koa = rows.find((r) => r.name === 'Koa floor')!;
console.log("thousand instructions a GET, median of the windows; the Koa floor's / this one's");
for (const { name, loop, all } of rows) {
  const [l, a] = [median(loop), median(all)];
  console.log(
    `  ${name.padEnd(28)} event loop ${(l / 1000).toFixed(1).padStart(6)} (${(median(koa.loop) / l).toFixed(2)})` +
      `  all threads ${(a / 1000).toFixed(1).padStart(6)} (${(median(koa.all) / a).toFixed(2)})`,
  );
}
console.log(`load average after: ${loadAverage()}`);
