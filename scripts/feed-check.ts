// The change feed checked end to end on running services, with figures (the tests check the
// same behaviour at a smaller scale):
//   1. SQLite: one stream follows 10,000 PATCHes from four clients, cut and resumed with
//      Last-Event-ID three times while they write; what it received is compared with the
//      log read page by page (every event once, in seq order).
//   2. PostgreSQL: two instances on one database; each of 200 PATCHes through A is timed
//      until its event arrives on a stream from B and on one from A (p50, p99, max); then every notification
//      connection is terminated and 200 more are timed (B reads the log instead until it
//      listens again).
//   3. The clients' guide's consumer (docs/clients.md, follow-log.ts), run as written
//      against the SQLite service: its first lines and its count.
//   node --import tsx scripts/feed-check.ts        (about a minute)
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest, type ClientRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { createDatabase, startPostgres } from './embedded-postgres.ts';
import { freePort, makeDatabase } from './bench/fixtures.ts';
import { children, ready, startService, stop } from './bench/harness.ts';

const ROOT = new URL('..', import.meta.url).pathname;
const PETS = 100;

interface Arrival {
  seq: bigint;
  petId: string;
  version: number;
  at: number;
}

/** An SSE stream of GET /v1/events, resumable: reconnect() goes on from the last id received. */
function follow(port: number, key: string, after: bigint) {
  const arrivals: Arrival[] = [];
  let req: ClientRequest | undefined;
  const open = (headers: Record<string, string>) =>
    new Promise<void>((resolve, reject) => {
      req = httpRequest(
        {
          host: '127.0.0.1',
          port,
          path: `/v1/events?after=${after}`,
          headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream', ...headers },
          agent: false,
        },
        (res) => {
          if (res.statusCode !== 200) return reject(new Error(`the feed answered ${res.statusCode}`));
          res.setEncoding('utf8');
          let buffer = '';
          res.on('data', (chunk: string) => {
            buffer += chunk;
            for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
              const message = buffer.slice(0, end);
              buffer = buffer.slice(end + 2);
              const data = /^data: (.*)$/m.exec(message)?.[1];
              if (data === undefined) continue;
              const e = JSON.parse(data.replace(/"(seq|petId)":(\d+)/g, '"$1":"$2"')) as { seq: string; petId: string; version: number };
              arrivals.push({ seq: BigInt(e.seq), petId: e.petId, version: e.version, at: performance.now() });
            }
          });
          resolve();
        },
      );
      req.on('error', () => undefined);
      req.end();
    });
  return {
    arrivals,
    start: () => open({}),
    async reconnect() {
      req?.destroy();
      await new Promise((r) => setTimeout(r, 100));
      const last = arrivals.at(-1)?.seq ?? after;
      await open({ 'last-event-id': String(last) });
    },
    close: () => req?.destroy(),
  };
}

async function call(port: number, key: string, method: string, path: string, body?: unknown) {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (res.status !== 200) throw new Error(`${method} ${path} answered ${res.status}: ${await res.text()}`);
  return res;
}

const head = async (port: number, key: string) =>
  BigInt(((await (await call(port, key, 'GET', '/v1/log/head')).json()) as { seq: number }).seq);

async function waitFor(done: () => boolean, ms: number): Promise<void> {
  const until = Date.now() + ms;
  while (!done()) {
    if (Date.now() > until) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
const spread = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return `p50 ${percentile(sorted, 50).toFixed(1)} ms, p99 ${percentile(sorted, 99).toFixed(1)} ms, max ${sorted.at(-1)!.toFixed(1)} ms`;
};

async function sqliteStream(dir: string): Promise<{ port: number; key: string; service: ChildProcess }> {
  const key = await makeDatabase(join(dir, 'feed.db'), PETS);
  const port = await freePort();
  const service = startService({ PORT: String(port), HOST: '127.0.0.1', INVENTORY_DB: join(dir, 'feed.db'), LOG_LEVEL: 'warn' });
  await ready(port, '/healthz');
  const start = await head(port, key);
  const stream = follow(port, key, start);
  await stream.start();
  const WRITES = 10_000;
  let written = 0;
  let reconnects = 0;
  const writer = async (client: number) => {
    for (let i = 0; i < WRITES / 4; i++) {
      await call(port, key, 'PATCH', `/v1/inventory/${1 + ((client * 7919 + i * 31) % PETS)}`, { quantity: i % 500 });
      written++;
      // Cut and resumed at a quarter, a half and three quarters of the writes.
      if (written % (WRITES / 4) === 0 && written < WRITES) {
        reconnects++;
        await stream.reconnect();
      }
    }
  };
  const began = performance.now();
  await Promise.all([0, 1, 2, 3].map(writer));
  const end = await head(port, key);
  await waitFor(() => (stream.arrivals.at(-1)?.seq ?? 0n) >= end, 10_000);
  stream.close();
  // The log itself, page by page.
  const table: bigint[] = [];
  for (let after = start; ;) {
    const page = (await (await call(port, key, 'GET', `/v1/events?after=${after}&limit=1000`)).text()).match(/"seq":(\d+)/g) ?? [];
    if (page.length === 0) break;
    for (const m of page) table.push(BigInt(m.slice(6)));
    after = table.at(-1)!;
  }
  const seen = stream.arrivals.map((a) => a.seq);
  const unique = new Set(seen);
  const inOrder = seen.every((s, i) => i === 0 || s > seen[i - 1]!);
  const missing = table.filter((s) => !unique.has(s)).length;
  console.log(
    `1. SQLite: ${written} PATCHes from 4 clients in ${((performance.now() - began) / 1000).toFixed(1)} s; the stream was cut and resumed ${reconnects} times; ` +
      `the log has ${table.length} events after seq ${start}; the stream received ${seen.length} (${unique.size} distinct): ` +
      `${seen.length - unique.size} repeated, ${missing} missing, ${inOrder ? 'all in seq order' : 'OUT OF ORDER'}, ` +
      `${seen.length === table.length && seen.every((s, i) => s === table[i]) ? 'equal to the log' : 'NOT EQUAL to the log'}`,
  );
  return { port, key, service };
}

async function postgresLatency(): Promise<void> {
  const postgres = await startPostgres('feed-check');
  try {
    const url = await createDatabase(postgres.url, 'feed_check');
    const key = await makeDatabase(url, PETS);
    const ports = [await freePort(), await freePort()];
    const services = ports.map((port) => startService({ PORT: String(port), HOST: '127.0.0.1', INVENTORY_DB: url, LOG_LEVEL: 'warn' }));
    await Promise.all(ports.map((p) => ready(p, '/healthz')));
    const [a, b] = ports as [number, number];
    const stream = follow(b, key, await head(b, key));
    await stream.start();
    // The writer's own stream: its commit reaches it through the commit signal.
    const here = follow(a, key, await head(a, key));
    await here.start();
    const timed = async (label: string) => {
      const fromSend: number[] = [];
      const fromAnswer: number[] = [];
      const hereFromAnswer: number[] = [];
      for (let i = 0; i < 200; i++) {
        const pet = 1 + (i % PETS);
        const sent = performance.now();
        const res = await call(a, key, 'PATCH', `/v1/inventory/${pet}`, { quantity: i });
        const answered = performance.now();
        const version = Number(res.headers.get('etag')!.replace(/"/g, ''));
        let arrival: Arrival | undefined;
        await waitFor(() => (arrival = stream.arrivals.find((e) => e.petId === String(pet) && e.version === version)) !== undefined, 5_000);
        fromSend.push(arrival!.at - sent);
        fromAnswer.push(arrival!.at - answered);
        let own: Arrival | undefined;
        await waitFor(() => (own = here.arrivals.find((e) => e.petId === String(pet) && e.version === version)) !== undefined, 5_000);
        hereFromAnswer.push(own!.at - answered);
      }
      console.log(
        `2. PostgreSQL, ${label}: 200 PATCHes through instance A, each on B's stream: from the request ${spread(fromSend)}; from A's answer ${spread(fromAnswer)}; ` +
          `on A's own stream, from A's answer ${spread(hereFromAnswer)}`,
      );
    };
    await timed('listening');
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    const { rowCount } = await admin.query(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'petstore-inventory listener' AND datname = current_database()",
    );
    await admin.end();
    await timed(`after its ${rowCount} notification connections were terminated`);
    stream.close();
    here.close();
    await Promise.all(services.map((s) => stop(s)));
  } finally {
    await postgres.stop();
  }
}

async function consumer(port: number, key: string): Promise<void> {
  const guide = readFileSync(join(ROOT, 'docs/clients.md'), 'utf8');
  const code = /\n```ts\n(\/\/ follow-log\.ts:[\s\S]*?)\n```/.exec(guide)?.[1];
  if (code === undefined) throw new Error('no follow-log.ts block in docs/clients.md');
  // Inside the repository, so that tsx resolves from its node_modules.
  mkdirSync(join(ROOT, '.generated-client'), { recursive: true });
  const dir = mkdtempSync(join(ROOT, '.generated-client', 'feed-check-'));
  try {
    writeFileSync(join(dir, 'follow-log.ts'), `${code}\n`);
    const proc = spawn(process.execPath, ['--import', 'tsx', 'follow-log.ts'], {
      cwd: dir,
      env: { ...process.env, INVENTORY_URL: `http://127.0.0.1:${port}`, INVENTORY_KEY: key },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    proc.stdout.setEncoding('utf8').on('data', (t: string) => (out += t));
    const end = await head(port, key);
    await waitFor(() => out.includes(`\n${end} `), 60_000);
    proc.kill('SIGTERM');
    const lines = out.trim().split('\n');
    console.log(
      `3. The clients' guide's consumer, as written: ${lines.length} lines, the hash chain checked; the first three and the last:`,
    );
    for (const line of [...lines.slice(0, 3), '…', lines.at(-1)!]) console.log(`   ${line}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const dir = mkdtempSync(join(tmpdir(), 'feed-check-'));
try {
  const sqlite = await sqliteStream(dir);
  await consumer(sqlite.port, sqlite.key);
  await stop(sqlite.service);
  await postgresLatency();
} finally {
  for (const child of children) child.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
}
