// npm run bench — the service against the limits of this machine, in one run.
// Starts, each as its own process on 127.0.0.1: the service (as npm start runs it), a
// bare node:http server sending the same GET bytes precomputed, and a bare node:http
// server doing one durable transaction per PATCH; drives each with autocannon (also its
// own process) for a fixed time, after a short warm-up; then a fresh service with
// 100,000 pets under 10 clients, reading its peak RSS. The service's loads run on
// PostgreSQL too (an embedded server started for the run). Prints requests/s, p50 and p99
// latency, errors and the ratios; writes them to bench-results/bench.json.
//   npm run bench [-- --seconds N]
//   npm run bench -- --baseline REF   the service against itself at git REF instead
//                                     (alternating rounds; see bench/baseline.ts)
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { compareWithBaseline } from './bench/baseline.ts';
import { createDatabase, startPostgres } from './embedded-postgres.ts';
import { freePort, makeDatabase } from './bench/fixtures.ts';
import { children, measure, peakRssMb, ready, start, stop, WARMUP_SECONDS, load, type Load } from './bench/harness.ts';

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '10' }, baseline: { type: 'string' } } });
const SECONDS = Number(values.seconds);
const ROOT = new URL('..', import.meta.url).pathname;

const dir = mkdtempSync(join(tmpdir(), 'bench-'));
try {
  if (values.baseline !== undefined) await compareWithBaseline({ ref: values.baseline, root: ROOT, dir, seconds: SECONDS });
  else await againstBareServers();
} finally {
  for (const child of children) child.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
}

async function againstBareServers(): Promise<void> {
  const PETS = 1000;
  console.log(`npm run bench: ${SECONDS} s per run after a ${WARMUP_SECONDS} s warm-up, node ${process.version}, 127.0.0.1 only`);
  const key = await makeDatabase(join(dir, 'service.db'), PETS);
  await makeDatabase(join(dir, 'bare.db'), PETS);
  const servicePort = await freePort();
  const service = start(['src/server.ts'], {
    PORT: String(servicePort),
    HOST: '127.0.0.1',
    INVENTORY_DB: join(dir, 'service.db'),
    LOG_LEVEL: 'info',
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
  await Promise.all([ready(bareGetPort), ready(barePatchPort)]);
  await new Promise((r) => setTimeout(r, 1000));

  const results: Record<string, Load> = {};
  const run = async (name: string, port: number, mode: 'get' | 'patch' | 'mix', connections: number, withKey = key) => {
    results[name] = await measure(port, mode, SECONDS, connections, withKey, PETS);
    const r = results[name];
    console.log(
      `${name.padEnd(44)} ${r.requests.average.toFixed(0).padStart(8)} req/s  p50 ${String(r.latency.p50).padStart(4)} ms  ` +
        `p99 ${String(r.latency.p99).padStart(4)} ms  errors ${r.errors + r.timeouts}  non-2xx ${r.non2xx}`,
    );
  };
  await run(`service GET, ${PETS} pets, 50 connections`, servicePort, 'get', 50);
  await run('bare GET, same bytes precomputed, 50 conn.', bareGetPort, 'get', 50);
  await run(`service PATCH over ${PETS} pets, 50 connections`, servicePort, 'patch', 50);
  await run('bare PATCH, 1 durable tx per request, 50 c.', barePatchPort, 'patch', 50);
  await run('service 90/10 GET/PATCH mix, 50 connections', servicePort, 'mix', 50);
  await Promise.all([stop(service), stop(bareGet), stop(barePatch)]);

  // The same service on PostgreSQL, on an embedded server of this run's own (fsync on).
  const postgres = await startPostgres('bench');
  try {
    const url = await createDatabase(postgres.url, 'bench');
    const pgKey = await makeDatabase(url, PETS);
    const pgPort = await freePort();
    const pgService = start(['src/server.ts'], { PORT: String(pgPort), HOST: '127.0.0.1', INVENTORY_DB: url, LOG_LEVEL: 'info' });
    await ready(pgPort, '/healthz');
    await run(`PostgreSQL: service GET, ${PETS} pets, 50 c.`, pgPort, 'get', 50, pgKey);
    await run(`PostgreSQL: service PATCH, ${PETS} pets, 50 c.`, pgPort, 'patch', 50, pgKey);
    await run('PostgreSQL: service 90/10 mix, 50 c.', pgPort, 'mix', 50, pgKey);
    await stop(pgService);
  } finally {
    await postgres.stop();
  }

  const BIG = 100_000;
  const bigKey = await makeDatabase(join(dir, 'big.db'), BIG);
  const bigPort = await freePort();
  const big = start(['src/server.ts'], { PORT: String(bigPort), HOST: '127.0.0.1', INVENTORY_DB: join(dir, 'big.db'), LOG_LEVEL: 'info' });
  await ready(bigPort, '/healthz');
  results[`service GET, ${BIG} pets, 10 connections`] = await load(bigPort, 'get', SECONDS, 10, bigKey, BIG);
  const bigRun = results[`service GET, ${BIG} pets, 10 connections`]!;
  const rss = peakRssMb(big.pid!);
  console.log(
    `${`service GET, ${BIG} pets, 10 connections`.padEnd(44)} ${bigRun.requests.average.toFixed(0).padStart(8)} req/s  ` +
      `p50 ${String(bigRun.latency.p50).padStart(4)} ms  p99 ${String(bigRun.latency.p99).padStart(4)} ms  ` +
      `errors ${bigRun.errors + bigRun.timeouts}  non-2xx ${bigRun.non2xx}  peak RSS ${rss.toFixed(0)} MB`,
  );
  await stop(big);

  const [sGet, bGet, sPatch, bPatch] = Object.values(results);
  const getRatio = sGet!.requests.average / bGet!.requests.average;
  const patchRatio = sPatch!.requests.average / bPatch!.requests.average;
  const allClean = Object.values(results).every((r) => r.non2xx === 0 && r.errors === 0 && r.timeouts === 0);
  const verdict = (ok: boolean) => (ok ? 'met' : 'NOT met');
  console.log('');
  console.log(`GET ratio service/bare: ${getRatio.toFixed(2)}x (target >= 0.8x: ${verdict(getRatio >= 0.8)})`);
  console.log(
    `PATCH ratio service/bare: ${patchRatio.toFixed(2)}x req/s (target >= 4x: ${verdict(patchRatio >= 4)}); ` +
      `p99 ${sPatch!.latency.p99} ms vs bare ${bPatch!.latency.p99} ms (target <=: ${verdict(sPatch!.latency.p99 <= bPatch!.latency.p99)})`,
  );
  console.log(`100,000 pets: peak RSS ${rss.toFixed(0)} MB (target <= 150 MB: ${verdict(rss <= 150)})`);
  console.log(`non-2xx responses and errors in every run: ${allClean ? 'none' : 'SOME'} (target: none: ${verdict(allClean)})`);
  mkdirSync(join(ROOT, 'bench-results'), { recursive: true });
  writeFileSync(
    join(ROOT, 'bench-results', 'bench.json'),
    `${JSON.stringify({ date: new Date().toISOString(), node: process.version, seconds: SECONDS, results, ratios: { get: getRatio, patch: patchRatio }, peakRssMb100k: rss }, null, 2)}\n`,
  );
}
