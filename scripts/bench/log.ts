// The verifiable log's rows of npm run bench: what receipts cost a PATCH (the service
// against the same tree without a signing key, alternated), and on a log of 1,000,000
// events: how long the migration that builds the Merkle tree for an existing log takes,
// an inclusion and a consistency proof's latency, and what the monitor (verify-log --url
// --checkpoint) downloads and how long it takes, counted by a TCP proxy in front of the
// service.
import { copyFileSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { connect, createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { loadMigrations, migrate } from '../../src/store/sqlite/migrate.ts';
import { freePort, makeDatabase } from './fixtures.ts';
import { loadLine, measure, ready, start, startService, stop, type Load } from './harness.ts';
import { quantile } from './many-readers.ts';
import { mirrorRuns, tileReads, timedScript } from './tiles.ts';

export interface LogRow {
  name: string;
  measured: string;
  target: string;
  met: boolean;
  floor?: string;
}

/** Receipts against no receipts, in rounds alternated so that a slow stretch falls on both. */
export async function receiptsCost(dir: string, seconds: number, rounds: number): Promise<LogRow> {
  const PETS = 1000;
  const key = await makeDatabase(join(dir, 'signed.db'), PETS);
  copyFileSync(join(dir, 'signed.db'), join(dir, 'unsigned.db'));
  const signedPort = await freePort();
  const unsignedPort = await freePort();
  const signed = startService({
    PORT: String(signedPort),
    HOST: '127.0.0.1',
    INVENTORY_DB: join(dir, 'signed.db'),
    LOG_LEVEL: 'warn',
    INVENTORY_SIGNING_KEY: join(dir, 'key.pem'),
  });
  const unsigned = start(['scripts/bench/unsigned-service.ts'], {
    PORT: String(unsignedPort),
    HOST: '127.0.0.1',
    INVENTORY_DB: join(dir, 'unsigned.db'),
  });
  try {
    await ready(signedPort, '/healthz');
    await ready(unsignedPort, '/healthz');
    const rates: { signed: Load[]; unsigned: Load[] } = { signed: [], unsigned: [] };
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? (['signed', 'unsigned'] as const) : (['unsigned', 'signed'] as const);
      for (const which of order)
        rates[which].push(await measure(which === 'signed' ? signedPort : unsignedPort, 'patch', seconds, 50, key, PETS));
    }
    const median = (loads: Load[]) => [...loads].sort((a, b) => a.requests.average - b.requests.average)[Math.floor(loads.length / 2)]!;
    const s = median(rates.signed);
    const u = median(rates.unsigned);
    for (const [name, r] of [
      ['SQLite service PATCH, receipts (median)', s],
      ['the same tree without a signing key (median)', u],
    ] as const) {
      console.log(loadLine(name, r));
    }
    const ratio = s.requests.average / u.requests.average;
    return {
      name: 'SQLite PATCH with receipts / the same tree without',
      measured: `${ratio.toFixed(2)}x`,
      target: '>= 0.95x',
      met: ratio >= 0.95,
      floor: `${u.requests.average.toFixed(0)} req/s`,
    };
  } finally {
    await stop(signed);
    await stop(unsigned);
  }
}

/** A log of events pets, the tree dropped, then the migration that builds it, timed. */
function migrationAt(db: string): number {
  const copy = `${db}.migrate.db`;
  copyFileSync(db, copy);
  const raw = new Database(copy);
  raw.exec('DROP TABLE tree_nodes; DELETE FROM schema_migrations WHERE version = 12');
  const started = performance.now();
  migrate(raw, loadMigrations(), copy);
  const ms = performance.now() - started;
  raw.close();
  return ms;
}

/** GET path on a keep-alive agent; its latency in ms. */
function timedGet(port: number, path: string, key: string, agent: Agent): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = request({ host: '127.0.0.1', port, path, agent, headers: { Authorization: `Bearer ${key}` } }, (res) => {
      res.resume();
      res.on('end', () =>
        res.statusCode === 200 ? resolve(performance.now() - started) : reject(new Error(`${path}: ${res.statusCode}`)),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

/** A TCP proxy that counts the bytes the service sends back. */
async function countingProxy(port: number): Promise<{ port: number; bytes: () => number; close: () => void }> {
  let bytes = 0;
  const server = createServer((client) => {
    const upstream = connect(port, '127.0.0.1');
    client.pipe(upstream);
    upstream.on('data', (chunk: Buffer) => (bytes += chunk.length));
    upstream.pipe(client);
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as AddressInfo).port, bytes: () => bytes, close: () => server.close() };
}

/** Inclusion and consistency proofs at size events, 2,000 of each at random, one after
 * another on one connection, after 1,000 to warm up (a service just started answers its
 * first proofs slower: see docs/performance.md); their p99 rows, named after prefix. */
export async function proofP99s(port: number, key: string, events: number, prefix = ''): Promise<LogRow[]> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const ask = (path: string) => timedGet(port, path, key, agent);
  const rows: LogRow[] = [];
  for (let i = 0; i < 1000; i++) await ask(`/v1/log/proof/inclusion?seq=${1 + ((i * 7919) % events)}&size=${events}`);
  for (const kind of ['inclusion', 'consistency'] as const) {
    const times: number[] = [];
    for (let i = 0; i < 2000; i++) {
      const a = 1 + Math.floor(Math.random() * events);
      times.push(
        await ask(
          kind === 'inclusion' ? `/v1/log/proof/inclusion?seq=${a}&size=${events}` : `/v1/log/proof/consistency?from=${a}&to=${events}`,
        ),
      );
    }
    times.sort((x, y) => x - y);
    const p99 = quantile(times, 0.99);
    console.log(
      `${prefix}${kind} proof at ${events} events: p50 ${quantile(times, 0.5).toFixed(2)} ms, p99 ${p99.toFixed(2)} ms (2,000 sequential, one connection)`,
    );
    rows.push({
      name: `${prefix}${kind} proof at ${events} events, p99`,
      measured: `${p99.toFixed(2)} ms`,
      target: '<= 5 ms',
      met: p99 <= 5,
    });
  }
  agent.destroy();
  return rows;
}

/** The monitor (verify-log --url --checkpoint) through a byte-counting proxy: a
 * checkpoint kept at today's size (as its first run keeps it, without that run's check
 * of the whole log, which is not what is measured), its key pinned, then ten writes, then
 * one run. Its rows, and the proxy (still open), the pinned keys and the writes for more. */
export async function monitorRun(port: number, key: string, dir: string, prefix = '') {
  const file = join(dir, 'monitor.checkpoint');
  const auth = { Authorization: `Bearer ${key}` };
  writeFileSync(file, await (await fetch(`http://127.0.0.1:${port}/v1/log/checkpoint`, { headers: auth })).text());
  const keys = (await (await fetch(`http://127.0.0.1:${port}/v1/log/signing-keys`, { headers: auth })).json()) as {
    verifierKey: string;
  }[];
  writeFileSync(`${file}.keys`, keys.map((k) => `${k.verifierKey}\n`).join(''));
  let written = 0;
  const writeTen = async () => {
    for (let i = 0; i < 10; i++, written++) {
      const res = await fetch(`http://127.0.0.1:${port}/v1/inventory/${1 + i}`, {
        method: 'PATCH',
        headers: { ...auth, 'Content-Type': 'application/json' },
        body: JSON.stringify({ quantity: written }),
      });
      if (res.status !== 200) throw new Error(`PATCH before a monitor's or mirror's run: ${res.status} ${await res.text()}`);
    }
  };
  await writeTen();
  const proxy = await countingProxy(port);
  const { ms, stderr } = await timedScript(
    'the monitor',
    'scripts/verify-log',
    ['--url', `http://127.0.0.1:${proxy.port}`, '--checkpoint', file],
    key,
  );
  writeFileSync(join(dir, 'monitor.out'), stderr);
  const bytes = proxy.bytes();
  const checkpoint = await (await fetch(`http://127.0.0.1:${port}/v1/log/checkpoint`, { headers: auth })).text();
  const at = `at ${checkpoint.split('\n')[1]} events`;
  console.log(
    `${prefix}the monitor's run ${at}: ${bytes} bytes from the service, ${ms.toFixed(0)} ms (the command's whole run, node's start included)`,
  );
  const rows: LogRow[] = [
    { name: `${prefix}monitor run ${at}, bytes downloaded`, measured: `${bytes} B`, target: '< 8 KB', met: bytes < 8192 },
    { name: `${prefix}monitor run ${at}, time`, measured: `${ms.toFixed(0)} ms`, target: '< 1 s', met: ms < 1000 },
  ];
  return { rows, proxy, trust: keys.map((k) => k.verifierKey), writeTen };
}

/** The rows on a log of events events (SQLite). */
export async function atScale(dir: string, events: number): Promise<LogRow[]> {
  const db = join(dir, 'million.db');
  const built = performance.now();
  const key = await makeDatabase(db, events);
  console.log(`a log of ${events} events made in ${((performance.now() - built) / 1000).toFixed(1)} s`);
  const migrationMs = migrationAt(db);
  console.log(`the migration that builds the Merkle tree for ${events} events: ${(migrationMs / 1000).toFixed(1)} s`);
  const port = await freePort();
  const service = startService({
    PORT: String(port),
    HOST: '127.0.0.1',
    INVENTORY_DB: db,
    LOG_LEVEL: 'warn',
    INVENTORY_SIGNING_KEY: join(dir, 'million-key.pem'),
  });
  const rows: LogRow[] = [];
  try {
    await ready(port, '/healthz');
    rows.push(...(await proofP99s(port, key, events)));
    rows.push(...(await tileReads(events, (path, a) => timedGet(port, path, key, a))));
    const monitor = await monitorRun(port, key, dir);
    rows.push(...monitor.rows);
    const { proxy, trust, writeTen } = monitor;
    rows.push(
      ...(await mirrorRuns(events, dir, { url: `http://127.0.0.1:${proxy.port}`, bytes: proxy.bytes, key, trust, write: writeTen })),
    );
    proxy.close();
    rows.push({
      name: `migration building the tree for ${events} events`,
      measured: `${(migrationMs / 1000).toFixed(1)} s`,
      target: '(measured)',
      met: true,
    });
  } finally {
    await stop(service);
  }
  return rows;
}
