// Where a load's CPU goes, by thread: the service (as npm start runs it, 1,000 pets) under
// a load of MODE at 50 connections for SECONDS, each of its threads' user + system time
// (/proc/<pid>/task/<tid>/stat) and the load generator's, in µs per request served,
// measured over the load after a warm-up. Linux only.
//   node --import tsx scripts/bench/thread-cpu.ts [MODE] [SECONDS] [ENV=VALUE | --node-flag ...]
import { readdirSync, readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, makeDatabase } from './fixtures.ts';
import { children, cpuMicros, load, loadAverage, ready, startService, stop, WARMUP_SECONDS, type Mode } from './harness.ts';

const [mode = 'patch', seconds = '10', ...envArgs] = process.argv.slice(2);
// Worker threads named worker-<threadId> in /proc, so that the writer and the signing
// thread can be told apart (the first worker is the writer).
const nodeArgs = ['--require', new URL('name-threads.cjs', import.meta.url).pathname, ...envArgs.filter((a) => a.startsWith('--'))];
const extraEnv = Object.fromEntries(
  envArgs.filter((a) => !a.startsWith('--')).map((a) => [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)]),
);
function threads(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const comm = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
      out.set(`${tid} ${comm}`, cpuMicros(`/proc/${pid}/task/${tid}/stat`));
    } catch (error) {
      // A thread that ended between the listing and the read.
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT' && (error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
    }
  }
  return out;
}
const selfChildrenCpu = () => cpuMicros('/proc/self/stat', { children: true });

const dir = mkdtempSync(join(tmpdir(), 'thread-cpu-'));
try {
  const key = await makeDatabase(join(dir, 'service.db'), 1000);
  const port = await freePort();
  const service = startService(
    { PORT: String(port), HOST: '127.0.0.1', INVENTORY_DB: join(dir, 'service.db'), LOG_LEVEL: 'info', ...extraEnv },
    undefined,
    nodeArgs,
  );
  await ready(port, '/healthz');
  console.log(`load average before: ${loadAverage()}`);
  await load(port, mode as Mode, WARMUP_SECONDS, 50, key, 1000);
  const before = threads(service.pid!);
  const childrenBefore = selfChildrenCpu();
  const result = await load(port, mode as Mode, Number(seconds), 50, key, 1000);
  const after = threads(service.pid!);
  const generator = selfChildrenCpu() - childrenBefore;
  const served = result['2xx'] + result.non2xx;
  console.log(
    `${mode}: ${result.requests.average.toFixed(0)} req/s, ${served} served, p99 ${result.latency.p99} ms, non-2xx ${result.non2xx}`,
  );
  let total = 0;
  for (const [name, cpu] of after) {
    const used = cpu - (before.get(name) ?? 0);
    total += used;
    if (used / served >= 0.5) console.log(`  ${name.padEnd(28)} ${(used / served).toFixed(1).padStart(7)} µs/request`);
  }
  console.log(`  ${'service, all threads'.padEnd(28)} ${(total / served).toFixed(1).padStart(7)} µs/request`);
  console.log(`  ${'load generator'.padEnd(28)} ${(generator / served).toFixed(1).padStart(7)} µs/request`);
  console.log(`load average after: ${loadAverage()}`);
  await stop(service);
} finally {
  for (const child of children) child.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
}
