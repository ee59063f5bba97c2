// What a GET costs the service's process in CPU, beside the Koa floor, at a fixed rate
// that none of them is short of: the service (as npm start runs it, 1,000 pets), the
// service with CORS_ORIGINS set and a browser's Origin sent, and the Koa floor of npm run
// bench, each driven in turn at RATE requests a second over 50 connections, in ROUNDS
// rounds each in another order. Each one's user + system time (/proc/<pid>/stat) per
// request answered, and the floor's share of it. At 50 connections as fast as answered,
// the load generator is the slower side, so npm run bench's GET ratios lean towards 1;
// this shows what each side costs on its own. Linux only.
//   node --import tsx scripts/bench/get-cpu.ts [RATE] [SECONDS] [ROUNDS]
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, serviceOnNewDatabase } from './fixtures.ts';
import { children, cpuMicros, load, loadAverage, ready, start, WARMUP_SECONDS, type Mode } from './harness.ts';

const [rate = '15000', seconds = '5', rounds = '5'] = process.argv.slice(2);
const PETS = 1000;

interface Side {
  name: string;
  port: number;
  pid: number;
  mode: Mode;
  key: string;
  perRequest: number[];
}

const dir = mkdtempSync(join(tmpdir(), 'get-cpu-'));
try {
  const sides: Side[] = [];
  for (const cors of [false, true]) {
    const { key, port, child: service } = await serviceOnNewDatabase(join(dir, cors ? 'cors.db' : 'service.db'), PETS, cors);
    const name = cors ? 'service, CORS_ORIGINS set, Origin sent' : 'service';
    sides.push({ name, port, pid: service.pid!, mode: cors ? 'get-cors' : 'get', key, perRequest: [] });
  }
  const [first] = sides;
  const answer = await fetch(`http://127.0.0.1:${first!.port}/v1/inventory`, { headers: { authorization: `Bearer ${first!.key}` } });
  writeFileSync(join(dir, 'body.json'), Buffer.from(await answer.arrayBuffer()));
  const koaPort = await freePort();
  const koa = start(['scripts/bench/koa-get.ts', String(koaPort), join(dir, 'body.json'), first!.key]);
  await ready(koaPort);
  sides.push({ name: 'Koa floor', port: koaPort, pid: koa.pid!, mode: 'get', key: first!.key, perRequest: [] });

  console.log(`get-cpu: ${rate} GET/s at 50 connections, ${seconds} s per run, ${rounds} rounds; load average before: ${loadAverage()}`);
  for (const side of sides) await load(side.port, side.mode, WARMUP_SECONDS, 50, side.key, PETS, 0, Number(rate));
  for (let round = 0; round < Number(rounds); round++) {
    for (let k = 0; k < sides.length; k++) {
      const side = sides[(k + round) % sides.length]!;
      const before = cpuMicros(`/proc/${side.pid}/stat`);
      const result = await load(side.port, side.mode, Number(seconds), 50, side.key, PETS, 0, Number(rate));
      const used = cpuMicros(`/proc/${side.pid}/stat`) - before;
      if (result.non2xx > 0 || result.errors > 0)
        throw new Error(`${side.name}: ${result.non2xx} answers not 2xx, ${result.errors} errors`);
      side.perRequest.push(used / result['2xx']);
      console.log(
        `  round ${round + 1}: ${side.name.padEnd(40)} ${(used / result['2xx']).toFixed(1).padStart(6)} µs/request at ${result.requests.average.toFixed(0)} req/s`,
      );
    }
  }
  const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;
  const floor = mean(sides.at(-1)!.perRequest);
  for (const side of sides) {
    const cost = mean(side.perRequest);
    const range = `${Math.min(...side.perRequest).toFixed(1)}-${Math.max(...side.perRequest).toFixed(1)}`;
    console.log(
      `${side.name.padEnd(40)} ${cost.toFixed(1).padStart(6)} µs/request (rounds ${range})   floor / this ${(floor / cost).toFixed(2)}x`,
    );
  }
  console.log(`load average after: ${loadAverage()}`);
} finally {
  for (const child of children) child.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
}
