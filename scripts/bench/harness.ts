// What the benchmark's parts share: starting a server process on 127.0.0.1 (the
// service from any checkout, or a bare baseline), waiting until it answers, driving it
// with the load generator (a process of its own), and reading its peak memory.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';

// Long enough for the JIT and the caches to settle; short enough that the whole bench,
// on both stores, stays near seven minutes. BENCH_WARMUP_SECONDS shortens it for a run
// that only checks that every part works (its figures mean nothing).
export const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP_SECONDS ?? 3);
const ROOT = new URL('../..', import.meta.url).pathname;
/** The origin of the browser front end the CORS runs allow (CORS_ORIGINS) and send. */
export const BENCH_ORIGIN = 'http://localhost:5173';
/** Every process started, so that the benchmark can kill what is left when it ends. */
export const children = new Set<ChildProcess>();

export interface Load {
  requests: { average: number };
  latency: { p50: number; p99: number };
  errors: number;
  timeouts: number;
  non2xx: number;
  '2xx': number;
}

/** Starts `node --import tsx ARGS` in root (this checkout by default). */
export function start(args: string[], env: Record<string, string> = {}, root = ROOT): ChildProcess {
  return spawnNode(['--import', 'tsx', ...args], env, root);
}

/** Starts node with args in root, its stderr passed on; stopped with the bench. */
function spawnNode(args: string[], env: Record<string, string>, root: string): ChildProcess {
  const child = spawn(process.execPath, args, {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  children.add(child);
  child.on('exit', () => children.delete(child));
  return child;
}

const built = new Set<string>();

/**
 * Starts the service of the checkout at root as `npm start` runs it: compiled once
 * (scripts/build.mjs) and run by node alone, with nodeArgs before the bundle. A checkout
 * from before the service was compiled runs its source through tsx, as its npm start did.
 */
export function startService(env: Record<string, string>, root = ROOT, nodeArgs: string[] = []): ChildProcess {
  if (!existsSync(join(root, 'scripts/build.mjs'))) return start([...nodeArgs, 'src/server.ts'], env, root);
  if (!built.has(root)) {
    execFileSync(process.execPath, ['scripts/build.mjs'], { cwd: root, stdio: 'inherit' });
    built.add(root);
  }
  return spawnNode([...nodeArgs, 'dist/server.mjs'], env, root);
}

/** Waits until the port answers HTTP (any status), at most 20 s. */
export async function ready(port: number, path = '/'): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    try {
      await fetch(`http://127.0.0.1:${port}${path}`);
      return;
    } catch {
      if (Date.now() > deadline) throw new Error(`nothing answers on port ${port}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

export type Mode = 'get' | 'get-cors' | 'patch' | 'patch-keyed' | 'mix' | 'pairs' | 'healthz' | 'metrics';

/** A load on the port for seconds; for mode pairs, at most pairs PATCH-then-GET pairs;
 * rate: requests a second in all (0: as fast as they are answered). */
export function load(
  port: number,
  mode: Mode,
  seconds: number,
  connections: number,
  key: string,
  pets: number,
  pairs = 0,
  rate = 0,
): Promise<Load> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        'scripts/bench/load.ts',
        `http://127.0.0.1:${port}`,
        mode,
        String(seconds),
        String(connections),
        key,
        String(pets),
        String(pairs),
        String(rate),
      ],
      { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    child.stdout.on('data', (c) => (out += c));
    child.on('close', (code) => (code === 0 ? resolve(JSON.parse(out) as Load) : reject(new Error(`load generator exited ${code}`))));
  });
}

/** A warm-up run, then the measured one. */
export async function measure(port: number, mode: Mode, seconds: number, connections: number, key: string, pets: number): Promise<Load> {
  await load(port, mode, WARMUP_SECONDS, connections, key, pets);
  return load(port, mode, seconds, connections, key, pets);
}

/** One load's line of the bench's output: its name padded to width, requests a second,
 * p50 and p99, errors and non-2xx answers. */
export function loadLine(name: string, r: Load, width = 52): string {
  return (
    `${name.padEnd(width)} ${r.requests.average.toFixed(0).padStart(7)} req/s  p50 ${String(r.latency.p50).padStart(4)} ms  ` +
    `p99 ${String(r.latency.p99).padStart(4)} ms  errors ${r.errors + r.timeouts}  non-2xx ${r.non2xx}`
  );
}

/** Peak resident set size of a process so far, in MB (Linux: VmHWM). */
export function peakRssMb(pid: number): number {
  const kb = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kb) / 1024;
}

export async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const gone = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await gone;
}

/** The middle value (of an even count, the upper of the two middle ones). */
export const median = (values: readonly number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** The 1, 5 and 15 minute load averages, as uptime prints them. */
export function loadAverage(): string {
  return loadavg()
    .map((n) => n.toFixed(2))
    .join(', ');
}

const TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

/** User plus system CPU time, in µs, of a thread or process from its /proc stat file
 * (Linux); with children, that of its children it has reaped instead. */
export function cpuMicros(statPath: string, { children = false } = {}): number {
  // After "pid (comm) ", field 3 (state) is the first: utime and stime are fields 14 and
  // 15, the reaped children's cutime and cstime 16 and 17.
  const stat = readFileSync(statPath, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const at = children ? 13 : 11;
  return ((Number(fields[at]) + Number(fields[at + 1])) * 1e6) / TICKS;
}
