// npm run bench -- --baseline REF: this checkout's service against the same service as
// it was at git REF, in one run, so that a change is judged by a ratio measured on the
// same machine at the same time, not against figures from another day. REF is checked
// out into a temporary git worktree (sharing this checkout's node_modules); each service
// gets its own copy of the same database. Each load (GET, PATCH, 90/10 mix) runs in three
// rounds, alternating which service goes first, and the medians are compared, with the
// CPU time each service spent per request in its rounds (user + system, from /proc, so
// Linux only): the work a change adds or saves, which the machine's stretches move less
// than they move requests a second. Then each
// serves 100,000 pets to 10 clients and its peak RSS is read. Writes
// bench-results/baseline.json.
import { execFileSync } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, makeDatabase } from './fixtures.ts';
import {
  children,
  cpuMicros,
  load,
  loadAverage,
  median,
  peakRssMb,
  ready,
  startService as startServiceAt,
  stop,
  type Load,
  type Mode,
  WARMUP_SECONDS,
} from './harness.ts';

const ROUNDS = 3;
const PETS = 1000;
const BIG = 100_000;

interface Options {
  ref: string;
  /** This checkout. */
  root: string;
  /** A scratch directory, removed by the caller. */
  dir: string;
  seconds: number;
}

interface Side {
  name: string;
  root: string;
}

async function startService(side: Side, db: string): Promise<{ port: number; stop(): Promise<void>; pid: number }> {
  const port = await freePort();
  const child = startServiceAt({ PORT: String(port), HOST: '127.0.0.1', INVENTORY_DB: db, LOG_LEVEL: 'info' }, side.root);
  await ready(port, '/healthz');
  return { port, pid: child.pid!, stop: () => stop(child) };
}

function line(name: string, r: Load, extra = ''): string {
  return (
    `${name.padEnd(40)} ${r.requests.average.toFixed(0).padStart(7)} req/s  p99 ${String(r.latency.p99).padStart(4)} ms  ` +
    `errors ${r.errors + r.timeouts}  non-2xx ${r.non2xx}${extra}`
  );
}

export async function compareWithBaseline({ ref, root, dir, seconds }: Options): Promise<void> {
  const commit = execFileSync('git', ['-C', root, 'rev-parse', '--verify', `${ref}^{commit}`], { encoding: 'utf8' }).trim();
  const head = execFileSync('git', ['-C', root, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
  const checkout = join(dir, 'baseline');
  execFileSync('git', ['-C', root, 'worktree', 'add', '--detach', checkout, commit], { stdio: 'ignore' });
  try {
    symlinkSync(join(root, 'node_modules'), join(checkout, 'node_modules'));
    const sides: Side[] = [
      { name: `this checkout (${head})`, root },
      { name: `baseline ${ref} (${commit.slice(0, 7)})`, root: checkout },
    ];
    console.log(
      `npm run bench --baseline: ${sides[0]!.name} against ${sides[1]!.name}, ${ROUNDS} alternating rounds of ` +
        `${seconds} s per load, node ${process.version}, 127.0.0.1 only`,
    );
    const loadBefore = loadAverage();
    console.log(`load average before: ${loadBefore}`);
    const keys = await Promise.all(sides.map((_, i) => makeDatabase(join(dir, `side${i}.db`), PETS)));
    const services = [];
    for (const [i, side] of sides.entries()) services.push(await startService(side, join(dir, `side${i}.db`)));

    const modes = ['get', 'patch', 'mix'] as const satisfies Mode[];
    const runs: Record<(typeof modes)[number], Load[][]> = { get: [[], []], patch: [[], []], mix: [[], []] };
    const cpu: Record<(typeof modes)[number], number[][]> = { get: [[], []], patch: [[], []], mix: [[], []] };
    for (const mode of modes) {
      for (let round = 0; round < ROUNDS; round++) {
        const order = round % 2 === 0 ? [0, 1] : [1, 0];
        for (const i of order) {
          const { port, pid } = services[i]!;
          await load(port, mode, WARMUP_SECONDS, 50, keys[i]!, PETS);
          const before = cpuMicros(`/proc/${pid}/stat`);
          const r = await load(port, mode, seconds, 50, keys[i]!, PETS);
          const perRequest = (cpuMicros(`/proc/${pid}/stat`) - before) / (r['2xx'] + r.non2xx);
          runs[mode][i]!.push(r);
          cpu[mode][i]!.push(perRequest);
          console.log(line(`${mode} round ${round + 1}: ${i === 0 ? 'this' : 'baseline'}`, r, `  CPU ${perRequest.toFixed(1)} µs/request`));
        }
      }
    }
    await Promise.all(services.map((s) => s.stop()));

    const rss: number[] = [];
    const bigKeys = await Promise.all(sides.map((_, i) => makeDatabase(join(dir, `big${i}.db`), BIG)));
    for (const [i, side] of sides.entries()) {
      const service = await startService(side, join(dir, `big${i}.db`));
      const r = await load(service.port, 'get', seconds, 10, bigKeys[i]!, BIG);
      rss.push(peakRssMb(service.pid));
      console.log(line(`get ${BIG} pets, 10 conn.: ${i === 0 ? 'this' : 'baseline'}`, r, `  peak RSS ${rss[i]!.toFixed(0)} MB`));
      await service.stop();
    }

    console.log('');
    console.log(`${'median of rounds'.padEnd(22)} ${'this'.padStart(10)} ${'baseline'.padStart(10)}   ratio`);
    const summary: Record<string, { this: number; baseline: number; ratio: number }> = {};
    for (const mode of modes) {
      const [mine, theirs] = runs[mode].map((rs) => median(rs.map((r) => r.requests.average))) as [number, number];
      const [p99Mine, p99Theirs] = runs[mode].map((rs) => median(rs.map((r) => r.latency.p99))) as [number, number];
      summary[`${mode} req/s`] = { this: mine, baseline: theirs, ratio: mine / theirs };
      summary[`${mode} p99 ms`] = { this: p99Mine, baseline: p99Theirs, ratio: p99Mine / p99Theirs };
      const [cpuMine, cpuTheirs] = cpu[mode].map((rounds) => median(rounds)) as [number, number];
      summary[`${mode} CPU µs/request`] = { this: cpuMine, baseline: cpuTheirs, ratio: cpuMine / cpuTheirs };
    }
    summary['peak RSS MB, 100k pets'] = { this: rss[0]!, baseline: rss[1]!, ratio: rss[0]! / rss[1]! };
    for (const [name, s] of Object.entries(summary)) {
      const digits = name.includes('µs') ? 1 : 0;
      console.log(
        `${name.padEnd(22)} ${s.this.toFixed(digits).padStart(10)} ${s.baseline.toFixed(digits).padStart(10)}   ${s.ratio.toFixed(2)}x`,
      );
    }
    const clean = Object.values(runs).every((sides) => sides.every((rs) => rs.every((r) => r.errors + r.timeouts + r.non2xx === 0)));
    console.log(`errors and non-2xx in every run: ${clean ? 'none' : 'SOME'}`);
    const loadAfter = loadAverage();
    console.log(`load average (1, 5, 15 min) before: ${loadBefore}; after: ${loadAfter}`);
    mkdirSync(join(root, 'bench-results'), { recursive: true });
    writeFileSync(
      join(root, 'bench-results', 'baseline.json'),
      `${JSON.stringify({ date: new Date().toISOString(), node: process.version, seconds, loadAverage: { before: loadBefore, after: loadAfter }, head, baseline: commit, summary, runs, cpuMicrosPerRequest: cpu }, null, 2)}\n`,
    );
  } finally {
    for (const child of children) child.kill('SIGKILL');
    execFileSync('git', ['-C', root, 'worktree', 'remove', '--force', checkout], { stdio: 'ignore' });
  }
}
