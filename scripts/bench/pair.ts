// Two GET loads compared round by round: each round runs A and B one right after the
// other (the order swapped every round), and the ratio B/A of that round's requests a
// second is kept; the median of the rounds' ratios and their quartiles are printed. On
// this shared machine the speed drifts over tens of seconds, so a ratio of neighbouring
// rounds carries much less of the drift than the ratio of two medians taken apart.
// Also each side's CPU per request (user + system from /proc, median). Linux only.
//   node --import tsx scripts/bench/pair.ts A B [ROUNDS] [SECONDS] [CONNECTIONS]
//   A, B: koa (the Koa floor of npm run bench), service, cors (CORS_ORIGINS set, the
//         browser's Origin sent), cors-no-origin (CORS_ORIGINS set, no Origin sent:
//         only Vary is added), service-origin (the Origin sent to a service without CORS)
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, serviceOnNewDatabase } from './fixtures.ts';
import { children, cpuMicros, load, loadAverage, median, ready, start, stop, type Mode } from './harness.ts';

const KINDS = ['koa', 'service', 'cors', 'cors-no-origin', 'service-origin'] as const;
type Kind = (typeof KINDS)[number];
const [a, b, rounds = '12', seconds = '4', connections = '50'] = process.argv.slice(2);
if (!KINDS.includes(a as Kind) || !KINDS.includes(b as Kind)) {
  process.stderr.write(`usage: pair.ts A B [ROUNDS] [SECONDS] [CONNECTIONS]; A, B: ${KINDS.join('|')}\n`);
  process.exit(2);
}
const PETS = 1000;

interface Side {
  kind: Kind;
  port: number;
  child: ChildProcess;
  key: string;
  mode: Mode;
}

const dir = mkdtempSync(join(tmpdir(), 'pair-'));

/** A service of its own on a database of its own (named for the side: A and B may be of
 * one kind), CORS on or off. */
async function service(kind: Kind, name: string, cors: boolean): Promise<Side> {
  const { key, port, child } = await serviceOnNewDatabase(join(dir, `${name}.db`), PETS, cors);
  const origin = kind === 'cors' || kind === 'service-origin';
  return { kind, port, child, key, mode: origin ? 'get-cors' : 'get' };
}

/** The Koa floor, sending the bytes a service of its own sends for the list. */
async function koaFloor(name: string): Promise<Side> {
  const source = await service('koa', name, false);
  const response = await fetch(`http://127.0.0.1:${source.port}/v1/inventory`, { headers: { authorization: `Bearer ${source.key}` } });
  writeFileSync(join(dir, `${name}.json`), Buffer.from(await response.arrayBuffer()));
  await stop(source.child);
  const port = await freePort();
  const child = start(['scripts/bench/koa-get.ts', String(port), join(dir, `${name}.json`), source.key]);
  await ready(port);
  return { kind: 'koa', port, child, key: source.key, mode: 'get' };
}

const sideOf = (kind: Kind, name: string) => (kind === 'koa' ? koaFloor(name) : service(kind, name, kind.startsWith('cors')));

/** One measured run after a second's warm-up: requests a second and CPU µs per request. */
async function measured(side: Side): Promise<[number, number]> {
  await load(side.port, side.mode, 1, Number(connections), side.key, PETS);
  const before = cpuMicros(`/proc/${side.child.pid}/stat`);
  const result = await load(side.port, side.mode, Number(seconds), Number(connections), side.key, PETS);
  const perSecond = result.requests.average;
  return [perSecond, (cpuMicros(`/proc/${side.child.pid}/stat`) - before) / (perSecond * Number(seconds))];
}

const quartiles = (values: number[]) => {
  const sorted = [...values].sort((x, y) => x - y);
  return `${sorted[Math.floor(sorted.length / 4)]!.toFixed(3)}-${sorted[Math.floor((3 * sorted.length) / 4)]!.toFixed(3)}`;
};

try {
  const A = await sideOf(a as Kind, 'a');
  const B = await sideOf(b as Kind, 'b');
  console.log(
    `pair: ${a} against ${b}, ${rounds} rounds of ${seconds} s at ${connections} connections; load average before: ${loadAverage()}`,
  );
  const ratios: number[] = [];
  const cpu: Record<'a' | 'b', number[]> = { a: [], b: [] };
  for (let round = 0; round < Number(rounds); round++) {
    const first = round % 2 === 0 ? A : B;
    const firstRun = await measured(first);
    const secondRun = await measured(first === A ? B : A);
    const [ra, ua] = first === A ? firstRun : secondRun;
    const [rb, ub] = first === A ? secondRun : firstRun;
    ratios.push(rb / ra);
    cpu.a.push(ua);
    cpu.b.push(ub);
    console.log(
      `  round ${round + 1}: ${a} ${ra.toFixed(0)} req/s ${ua.toFixed(1)} µs, ${b} ${rb.toFixed(0)} req/s ${ub.toFixed(1)} µs: ${(rb / ra).toFixed(3)}`,
    );
  }
  console.log(
    `${b} / ${a}: ${median(ratios).toFixed(3)} of the requests a second (rounds' quartiles ${quartiles(ratios)}), ${ratios.filter((r) => r < 1).length} of ${ratios.length} rounds below 1`,
  );
  console.log(`CPU per request: ${a} ${median(cpu.a).toFixed(1)} µs, ${b} ${median(cpu.b).toFixed(1)} µs`);
  console.log(`load average after: ${loadAverage()}`);
} finally {
  for (const child of children) child.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
}
