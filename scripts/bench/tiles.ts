// The C2SP tiles' rows of npm run bench, on the log that bench/log.ts builds at scale: a
// tile read's latency (hash tiles of every level, entry bundles and their JSON Lines, at
// random indices, full and partial) and what scripts/mirror costs, its first copy of the
// whole log and one run after a few writes (time, and bytes counted by a TCP proxy in
// front of the service).
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent } from 'node:http';
import { join } from 'node:path';
import { tilePath, TILE_WIDTH, type Tile } from '../../src/support/tiles.ts';
import type { LogRow } from './log.ts';
import { quantile } from './many-readers.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
const READS = 2000;

type Get = (path: string, agent: Agent) => Promise<number>;

/** A random tile of a log of `events` leaves: a hash tile of any level it has, or a bundle. */
function randomTile(events: number, kind: Tile['kind']): Tile {
  let width = events;
  if (typeof kind === 'number') for (let level = 0; level < kind; level++) width = Math.floor(width / TILE_WIDTH);
  const tiles = Math.ceil(width / TILE_WIDTH);
  const index = Math.floor(Math.random() * tiles);
  return { kind, index, width: Math.min(TILE_WIDTH, width - index * TILE_WIDTH) };
}

/** Tile reads, one at a time on one connection: p50 and p99 over READS. */
export async function tileReads(events: number, get: Get): Promise<LogRow[]> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const levels = [0, 1, 2].filter((level) => events >= TILE_WIDTH ** level);
  const kinds: Tile['kind'][] = [...levels, 'entries', 'events'];
  const rows: LogRow[] = [];
  try {
    for (let i = 0; i < 200; i++) await get(`/v1/log/${tilePath(randomTile(events, kinds[i % kinds.length]!))}`, agent);
    for (const kind of kinds) {
      const times: number[] = [];
      for (let i = 0; i < READS / kinds.length; i++) times.push(await get(`/v1/log/${tilePath(randomTile(events, kind))}`, agent));
      times.sort((x, y) => x - y);
      const p99 = quantile(times, 0.99);
      const name = typeof kind === 'number' ? `hash tile, level ${kind}` : kind === 'entries' ? 'entry bundle' : 'events tile';
      console.log(
        `${name} at ${events} events: p50 ${quantile(times, 0.5).toFixed(2)} ms, p99 ${p99.toFixed(2)} ms (${times.length} sequential, one connection)`,
      );
      rows.push({ name: `${name} read at ${events} events, p99`, measured: `${p99.toFixed(2)} ms`, target: '<= 5 ms', met: p99 <= 5 });
    }
  } finally {
    agent.destroy();
  }
  return rows;
}

/** One run of a script with the service's key (not spawnSync: a proxy in front of the
 * service forwards on this process's event loop), timed; a failed run throws. */
export async function timedScript(what: string, script: string, args: string[], key: string): Promise<{ ms: number; stderr: string }> {
  const started = performance.now();
  const run = await new Promise<{ status: number | null; stderr: string }>((resolve, reject) => {
    const child = spawn(script, args, { cwd: ROOT, env: { ...process.env, INVENTORY_KEY: key }, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stderr }));
  });
  if (run.status !== 0) throw new Error(`${what} failed: ${run.stderr}`);
  return { ms: performance.now() - started, stderr: run.stderr };
}

export interface MirrorTarget {
  /** The service behind a byte-counting proxy. */
  url: string;
  bytes: () => number;
  key: string;
  trust: string[];
  /** A few writes between the first copy and the next run. */
  write: () => Promise<void>;
}

/** The mirror's first copy of the whole log, then one run after a few writes. */
export async function mirrorRuns(events: number, scratch: string, target: MirrorTarget): Promise<LogRow[]> {
  const dir = mkdtempSync(join(scratch, 'mirror-'));
  const rows: LogRow[] = [];
  try {
    for (const [name, before] of [
      ['first copy', undefined],
      ['run after 10 writes', target.write],
    ] as const) {
      await before?.();
      const bytesBefore = target.bytes();
      const args = ['--url', target.url, ...target.trust.flatMap((t) => ['--trust', t]), join(dir, 'copy')];
      const { ms, stderr } = await timedScript('the mirror', 'scripts/mirror', args, target.key);
      const bytes = target.bytes() - bytesBefore;
      console.log(
        `the mirror's ${name} at ${events} events: ${bytes} bytes, ${(ms / 1000).toFixed(1)} s; ${stderr.trim().split('\n').at(-1)}`,
      );
      rows.push({
        name: `mirror ${name} at ${events} events, time`,
        measured: `${(ms / 1000).toFixed(1)} s`,
        target: '(measured)',
        met: true,
      });
      rows.push({ name: `mirror ${name} at ${events} events, bytes`, measured: `${bytes} B`, target: '(measured)', met: true });
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return rows;
}
