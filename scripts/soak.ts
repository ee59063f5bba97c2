// npm run soak — the service under a 90/10 GET/PATCH mix for 60 s (autocannon in its own
// process, 127.0.0.1 only), sampling the service's resident memory every 5 s. Prints
// throughput, latency, errors and the memory samples, and exits 1 on any error or
// non-2xx response, or if memory keeps growing (the last third of the run above the
// middle third by more than 10%).
//   npm run soak [-- --seconds N --connections N]
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, makeDatabase } from './bench/fixtures.ts';
import { scriptArgs } from './script-args.ts';

const { values } = scriptArgs(import.meta.url, {
  seconds: { type: 'string', default: '60' },
  connections: { type: 'string', default: '20' },
});
const SECONDS = Number(values.seconds);
const ROOT = new URL('..', import.meta.url).pathname;
const PETS = 1000;

/** The summary scripts/bench/load.ts prints as JSON (autocannon's result, the parts read here). */
interface LoadResult {
  requests: { total: number; average: number };
  latency: { p50: number; p99: number };
  errors: number;
  timeouts: number;
  non2xx: number;
}

const dir = mkdtempSync(join(tmpdir(), 'soak-'));
const path = join(dir, 'inventory.db');
const key = await makeDatabase(path, PETS);
const port = await freePort();
const service = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
  cwd: ROOT,
  env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', INVENTORY_DB: path, LOG_LEVEL: 'info' },
  stdio: ['ignore', 'ignore', 'inherit'],
});
const rssMb = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${service.pid}/status`, 'utf8'))?.[1]) / 1024;

try {
  for (let i = 0; ; i++) {
    try {
      await fetch(`http://127.0.0.1:${port}/healthz`);
      break;
    } catch {
      if (i > 200) throw new Error('the service did not start');
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  console.log(`npm run soak: 90/10 GET/PATCH mix over ${PETS} pets, ${values.connections} connections, ${SECONDS} s`);
  const samples: number[] = [rssMb()];
  const sampler = setInterval(() => samples.push(rssMb()), 5000);
  const result = await new Promise<LoadResult>((resolve, reject) => {
    const load = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        'scripts/bench/load.ts',
        `http://127.0.0.1:${port}`,
        'mix',
        String(SECONDS),
        String(values.connections),
        key,
        String(PETS),
      ],
      {
        cwd: ROOT,
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    let out = '';
    load.stdout.on('data', (c) => (out += c));
    load.on('close', (code) => (code === 0 ? resolve(JSON.parse(out) as LoadResult) : reject(new Error(`load exited ${code}`))));
  });
  clearInterval(sampler);
  samples.push(rssMb());
  const third = Math.max(1, Math.floor(samples.length / 3));
  const avg = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const middle = avg(samples.slice(third, 2 * third));
  const last = avg(samples.slice(2 * third));
  const growing = last > middle * 1.1;
  const errors = result.errors + result.timeouts;
  console.log(
    `requests: ${result.requests.total} (${result.requests.average.toFixed(0)} req/s), p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms`,
  );
  console.log(`errors: ${errors}, non-2xx: ${result.non2xx}`);
  console.log(`service RSS every 5 s (MB): ${samples.map((s) => s.toFixed(0)).join(' ')}`);
  console.log(`memory: middle third ${middle.toFixed(0)} MB, last third ${last.toFixed(0)} MB: ${growing ? 'GROWING' : 'flat'}`);
  process.exitCode = errors === 0 && result.non2xx === 0 && !growing ? 0 : 1;
} finally {
  service.kill('SIGTERM');
  await new Promise((r) => service.once('exit', r));
  rmSync(dir, { recursive: true, force: true });
}
