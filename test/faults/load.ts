// Shared pieces of the fault tests: a seeded database, a keep-alive HTTP client that
// stamps every request with a logical clock (so that "acknowledged before that one was
// sent" is known exactly), and the checks run on the database afterwards.
import { createHash } from 'node:crypto';
import { Agent, request as httpRequest } from 'node:http';
import * as assert from 'uvu/assert';
import pg from 'pg';
import { openDatabase, type Db } from '../../src/store/sqlite/database.ts';
import { isPostgresUrl } from '../../src/store/open.ts';
import { createKey, trackPets } from '../kit/fixtures.ts';
import { seededRandom } from '../kit/random.ts';
import { runScriptSync } from '../kit/scripts.ts';
import { sqliteTarget } from '../kit/sqlite-target.ts';
import type { StoreTarget } from '../kit/stores.ts';

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Seeded, so that a run's choices can be repeated with FAULT_SEED. */
export const prng = seededRandom;

/** FAULT_SEED when set (to repeat a run), else a new seed; the tests print it in their summary. */
export function seedFromEnv(): number {
  const given = process.env.FAULT_SEED;
  return given !== undefined && /^\d+$/.test(given) ? Number(given) : Math.floor(Math.random() * 2 ** 31);
}

/** Makes a database with pets 1..pets (quantity 0) and one key per name; returns the keys. */
export async function seedDatabase(
  path: string,
  pets: number,
  keyNames: string[],
  target: StoreTarget = sqliteTarget(),
): Promise<string[]> {
  const store = await target.open(path);
  try {
    await trackPets(
      store,
      Array.from({ length: pets }, (_, i) => ({ petId: i + 1 })),
      'cli:fault-test',
    );
    const keys: string[] = [];
    for (const name of keyNames) keys.push(await createKey(store, name, 'cli:fault-test'));
    return keys;
  } finally {
    await store.close();
  }
}

// A logical clock: ticks when a request is sent and when its response has fully
// arrived. JavaScript runs one thing at a time, so ack(A) < sent(B) means that A's
// answer was in hand before B left: the service must have committed A first.
let clock = 0;
export const tick = () => ++clock;

export interface HttpResult {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/** One request on the given agent, bounded by timeoutMs. */
export function httpSend(
  agent: Agent,
  port: number,
  options: { method?: string; path: string; headers?: Record<string, string>; body?: string },
  timeoutMs = 10_000,
): Promise<HttpResult> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = { ...options.headers };
    if (options.body !== undefined) headers['Content-Length'] = Buffer.byteLength(options.body);
    const req = httpRequest({ host: '127.0.0.1', port, agent, method: options.method ?? 'GET', path: options.path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
      res.on('aborted', () => reject(new Error('response aborted')));
    });
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
    if (options.body !== undefined) req.write(options.body);
    req.end();
  });
}

export interface Write {
  requestId: string;
  pet: number;
  quantity: number;
  /** Which service process it was sent to. */
  via: string;
  sentAt: number;
  ackAt?: number;
  status?: number;
  /** The version of the 200's ETag. */
  version?: number;
  error?: string;
  ms?: number;
  body?: string;
}

/** Sends one PATCH and records what happened to it (never throws). */
export async function patch(agent: Agent, port: number, key: string, w: Write): Promise<Write> {
  const started = performance.now();
  w.sentAt = tick();
  try {
    const res = await httpSend(agent, port, {
      method: 'PATCH',
      path: `/v1/inventory/${w.pet}`,
      headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json', 'X-Request-Id': w.requestId },
      body: JSON.stringify({ quantity: w.quantity }),
    });
    w.ackAt = tick();
    w.ms = performance.now() - started;
    w.status = res.status;
    w.body = res.text;
    if (res.status === 200) {
      const etag = /^"(\d+)"$/.exec(String(res.headers.etag ?? ''));
      w.version = etag ? Number(etag[1]) : undefined;
    }
  } catch (err) {
    w.error = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
  }
  return w;
}

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

export interface EventRow {
  seq: number;
  pet_id: number;
  version: number;
  type: string;
  quantity: number | null;
  status: string | null;
  actor: string;
  request_id: string;
}

function readEvents(db: Db): EventRow[] {
  return db
    .prepare(
      `SELECT seq, pet_id, version, type, json_extract(data, '$.quantity') AS quantity,
              json_extract(data, '$.status') AS status, actor, request_id
       FROM events ORDER BY seq`,
    )
    .all() as EventRow[];
}

/**
 * The checks every fault test makes on the log; returns a list of problems (empty: all
 * well) and, for the summary, the acknowledged writes found and the unanswered ones
 * that were committed all the same.
 */
export function checkLog(
  events: EventRow[],
  writes: Write[],
  expect: { pets: number; actorOf?: (w: Write) => string },
): { problems: string[]; found: number; committedUnanswered: number } {
  const problems: string[] = [];
  const byRequest = new Map<string, EventRow[]>();
  for (const e of events) {
    const list = byRequest.get(e.request_id) ?? [];
    list.push(e);
    byRequest.set(e.request_id, list);
  }
  const acked = writes.filter((w) => w.status === 200);
  let found = 0;
  for (const w of acked) {
    const rows = byRequest.get(w.requestId) ?? [];
    if (rows.length !== 1) {
      problems.push(
        `acknowledged ${w.requestId} (pet ${w.pet}, quantity ${w.quantity}, version ${w.version}) is in events ${rows.length} times`,
      );
      continue;
    }
    const e = rows[0]!;
    const want = {
      pet_id: w.pet,
      type: 'QuantitySet',
      quantity: w.quantity,
      version: w.version,
      ...(expect.actorOf ? { actor: expect.actorOf(w) } : {}),
    };
    const got = { pet_id: e.pet_id, type: e.type, quantity: e.quantity, version: e.version, ...(expect.actorOf ? { actor: e.actor } : {}) };
    if (JSON.stringify(want) !== JSON.stringify(got)) {
      problems.push(`acknowledged ${w.requestId}: the 200 said ${JSON.stringify(want)}, events holds ${JSON.stringify(got)}`);
      continue;
    }
    if (w.body !== `{"petId":${w.pet},"quantity":${w.quantity},"status":"available"}`) {
      problems.push(`acknowledged ${w.requestId}: unexpected body ${w.body}`);
    }
    found++;
  }
  // Every event other than the seed is one of our requests, once: nothing made up.
  const sent = new Set(writes.map((w) => w.requestId));
  let committedUnanswered = 0;
  for (const [requestId, rows] of byRequest) {
    if (requestId === 'seed') continue;
    if (!sent.has(requestId)) problems.push(`events holds ${rows.length} event(s) with request id ${requestId}, which no test request had`);
    else if (rows.length !== 1) problems.push(`request ${requestId} is in events ${rows.length} times`);
  }
  for (const w of writes) if (w.status !== 200 && byRequest.has(w.requestId)) committedUnanswered++;

  // Per pet: versions 1..n, and the log's order (seq) is the version order.
  const perPet = new Map<number, EventRow[]>();
  for (const e of events) {
    const list = perPet.get(e.pet_id) ?? [];
    list.push(e);
    perPet.set(e.pet_id, list);
  }
  if (perPet.size !== expect.pets) problems.push(`events name ${perPet.size} pets, not ${expect.pets}`);
  for (const [pet, rows] of perPet) {
    // rows are in seq order already
    rows.forEach((e, i) => {
      if (e.version !== i + 1)
        problems.push(`pet ${pet}: event seq ${e.seq} has version ${e.version}, expected ${i + 1} (gap, duplicate or out of order)`);
    });
    if (rows[0]?.type !== 'PetTracked') problems.push(`pet ${pet}: the first event is ${rows[0]?.type}`);
  }

  // Real-time order: a write acknowledged before another was sent must come first in
  // the log (lower version, lower seq). Per pet, sweep the sends in order and keep the
  // highest version acknowledged so far.
  const seqOf = (w: Write) => byRequest.get(w.requestId)?.[0]?.seq ?? NaN;
  const ackedByPet = new Map<number, Write[]>();
  for (const w of acked) {
    const list = ackedByPet.get(w.pet) ?? [];
    list.push(w);
    ackedByPet.set(w.pet, list);
  }
  let orderProblems = 0;
  for (const [pet, list] of ackedByPet) {
    const bySent = [...list].sort((a, b) => a.sentAt - b.sentAt);
    const byAck = [...list].sort((a, b) => a.ackAt! - b.ackAt!);
    let j = 0;
    let before: Write | undefined;
    for (const w of bySent) {
      while (j < byAck.length && byAck[j]!.ackAt! < w.sentAt) {
        const a = byAck[j++]!;
        if (!before || a.version! > before.version!) before = a;
      }
      if (before && (w.version! <= before.version! || seqOf(w) <= seqOf(before)) && orderProblems++ < 10) {
        problems.push(
          `pet ${pet}: ${before.requestId} (version ${before.version}, seq ${seqOf(before)}) was acknowledged before ` +
            `${w.requestId} was sent, but ${w.requestId} has version ${w.version}, seq ${seqOf(w)}`,
        );
      }
    }
  }
  return { problems, found, committedUnanswered };
}

/** The projection the log implies: per pet, the last quantity, status and the version. */
export function replay(events: EventRow[]): Map<number, { quantity: number; status: string; version: number }> {
  const state = new Map<number, { quantity: number; status: string; version: number }>();
  for (const e of events) {
    const s = state.get(e.pet_id) ?? { quantity: 0, status: 'available', version: 0 };
    if (e.quantity !== null) s.quantity = e.quantity;
    if (e.status !== null) s.status = e.status;
    s.version = e.version;
    state.set(e.pet_id, s);
  }
  return state;
}

function readInventory(db: Db): { pet_id: number; quantity: number; status: string; version: number }[] {
  return db.prepare('SELECT pet_id, quantity, status, version FROM inventory ORDER BY pet_id').all() as {
    pet_id: number;
    quantity: number;
    status: string;
    version: number;
  }[];
}

/** The checks on the store itself: SQLite's integrity check (files only), the hash chain, the projection. */
export function checkFile(path: string): void {
  if (!isPostgresUrl(path)) {
    const db = openDatabase(path, { readonly: true });
    try {
      assert.equal(db.pragma('integrity_check', { simple: false }), [{ integrity_check: 'ok' }], 'PRAGMA integrity_check');
    } finally {
      db.close();
    }
  }
  const verify = runScriptSync('verify-log', [], { db: path });
  assert.is(verify.status, 0, `scripts/verify-log: ${verify.stdout}${verify.stderr}`);
  const rebuild = runScriptSync('rebuild-projection', ['--check'], { db: path });
  const out = `${rebuild.stdout}${rebuild.stderr}`;
  assert.is(rebuild.status, 0, `scripts/rebuild-projection --check: ${out}`);
  assert.match(out, / 0 differ/, out);
}

/** No key, key hash or Authorization header in what the services wrote. */
export function assertNoSecrets(outputs: { name: string; text: string }[], keys: string[]): void {
  for (const { name, text } of outputs) {
    for (const key of keys) {
      assert.not.ok(text.includes(key), `${name} contains an API key`);
      assert.not.ok(text.includes(createHash('sha256').update(key).digest('hex')), `${name} contains a key hash`);
    }
    assert.not.ok(/authorization/i.test(text), `${name} contains "Authorization"`);
    assert.not.ok(/pinv_[A-Za-z0-9]{32}/.test(text), `${name} contains something shaped like a key`);
  }
}

type Log = { events: EventRow[]; inventory: ReturnType<typeof readInventory> };

/** readLog for either store: a SQLite path, or a PostgreSQL URL read in one snapshot. */
export async function readLogOf(db: string): Promise<Log> {
  if (!isPostgresUrl(db)) return readLog(db);
  const client = new pg.Client({ connectionString: db });
  await client.connect();
  try {
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    const events = await client.query<EventRow>(
      `SELECT seq::int, pet_id::int, version, type, (data::jsonb ->> 'quantity')::int AS quantity,
              data::jsonb ->> 'status' AS status, actor, request_id
       FROM events ORDER BY seq`,
    );
    const inventory = await client.query<Log['inventory'][number]>(
      'SELECT pet_id::int, quantity, status, version FROM inventory ORDER BY pet_id',
    );
    await client.query('COMMIT');
    return { events: events.rows, inventory: inventory.rows };
  } finally {
    await client.end();
  }
}

/** The log and the projection as a test run left them, read through a read-only connection. */
export function readLog(path: string): Log {
  const db = openDatabase(path, { readonly: true });
  try {
    return { events: readEvents(db), inventory: readInventory(db) };
  } finally {
    db.close();
  }
}
