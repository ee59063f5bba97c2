// Authentication and change detection from memory. On SQLite the requests read in one
// turn of the event loop ask the database one cheap question (PRAGMA data_version), in
// the first one's authentication, which the list cache then reuses; the writer thread
// counts its commits where the main thread reads them without a message. On PostgreSQL
// the active keys live in memory while the notification connection proves current: no
// query per request, a key revoked through another instance refused within 100 ms, and
// the query per request again while the connection is down.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { openDatabase, type Db } from '../../src/store/sqlite/database.ts';
import type { InventoryStore } from '../../src/store/port.ts';
import { openPostgresStore } from '../../src/store/postgres/store.ts';
import { KEY_TRUST_SQL } from '../../src/store/keys.ts';
import { makeKeyWriter } from '../../src/store/sqlite/keys.ts';
import { makeReader } from '../../src/store/sqlite/reads/reads.ts';
import { commitCounter, startWriterThread } from '../../src/store/sqlite/writer/worker-client.ts';
import { startApp } from '../kit/app.ts';
import { freshPostgresDatabase, type TestDatabase } from '../kit/postgres-server.ts';
import { postgresTarget } from '../kit/postgres-target.ts';

const AT = '2026-01-01T00:00:00.000Z';

/** The connection, with how often each SQL text was run through it. */
function counted(db: Db): { db: Db; runs: Map<string, number> } {
  const runs = new Map<string, number>();
  const wrap = (sql: string, statement: object): object => {
    const proxy: object = new Proxy(statement, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver) as unknown;
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          if (['get', 'all', 'run', 'iterate'].includes(String(property))) runs.set(sql, (runs.get(sql) ?? 0) + 1);
          const result = (value as (...a: unknown[]) => unknown).apply(target, args);
          // pluck(), raw(), safeIntegers() return the statement: keep counting it.
          return result === target ? proxy : result;
        };
      },
    });
    return proxy;
  };
  const proxy = new Proxy(db, {
    get(target, property, receiver) {
      if (property === 'prepare') return (sql: string) => wrap(sql, target.prepare(sql));
      const value = Reflect.get(target, property, receiver) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { db: proxy, runs };
}

const sqlite = suite<{ dir: string; path: string }>(
  'SQLite: one change check per request (or per turn of requests), own commits counted in memory',
);
sqlite.before.each((ctx) => {
  ctx.dir = mkdtempSync(join(tmpdir(), 'key-memory-'));
  ctx.path = join(ctx.dir, 'inventory.db');
});
sqlite.after.each((ctx) => rmSync(ctx.dir, { recursive: true, force: true }));

/** A key made on a write connection, and a reader on a read-only connection whose
 * statements are counted: questions() is how often it asked whether anything changed. */
function keyFixture(path: string) {
  const writeDb = openDatabase(path);
  const readDb = openDatabase(path, { readonly: true });
  const keys = makeKeyWriter(writeDb);
  const key = keys.create('till-1', 'test', AT);
  const commits = commitCounter();
  const { db, runs } = counted(readDb);
  const reader = makeReader(db, db, { yieldBetweenPages: true, ownCommits: () => Atomics.load(commits, 0) });
  const questions = () => [...runs].filter(([sql]) => /data_version|total_changes/.test(sql)).reduce((n, [, count]) => n + count, 0);
  const close = () => {
    readDb.close();
    writeDb.close();
  };
  return { keys, key, commits, runs, reader, questions, close };
}

sqlite('a request costs one statement asking for changes, shared by authentication and the list cache', async ({ path }) => {
  const { keys, key, commits, runs, reader, questions, close } = keyFixture(path);
  try {
    const keyReads = () => runs.get(`${KEY_TRUST_SQL} WHERE k.hash = ?`) ?? 0;

    // One request: authentication, then the list cache's token.
    assert.is(reader.keys.authenticate(key)?.name, 'till-1');
    const token = reader.changeToken();
    assert.is(reader.changeToken(), token);
    assert.is(questions(), 1, 'one statement for the whole request');
    assert.is(keyReads(), 1);

    // The next request, in another turn: one more question, the key from memory.
    await nextTurn();
    assert.is(reader.keys.authenticate(key)?.name, 'till-1');
    assert.is(reader.changeToken(), token, 'nothing changed');
    assert.is(questions(), 2);
    assert.is(keyReads(), 1, 'a remembered key is not read again');

    // A revocation by another connection is seen by the very next authentication, even
    // in the same turn; and the list cache's token moves with it.
    assert.is(keys.revoke('till-1', 'test', AT), 'revoked');
    assert.is(reader.keys.authenticate(key), undefined);
    assert.is.not(reader.changeToken(), token);

    // This process's own commit (the writer thread counts it) moves the token at once,
    // even where a check of this turn would otherwise be reused.
    const before = reader.changeToken();
    Atomics.add(commits, 0, 1);
    assert.is.not(reader.changeToken(), before);
  } finally {
    close();
  }
});

sqlite('the requests read in one turn share one question; the next turn asks again', async ({ path }) => {
  const { keys, key, reader, questions, close } = keyFixture(path);
  try {
    // Three requests read in one turn, and the list cache after them: one question.
    for (let i = 0; i < 3; i++) assert.is(reader.keys.authenticateRequest(key)?.name, 'till-1');
    reader.changeToken();
    assert.is(questions(), 1);

    // A revocation committed while the turn's requests are handled: they were sent before
    // it, and share the turn's question.
    assert.is(keys.revoke('till-1', 'test', AT), 'revoked');
    assert.is(reader.keys.authenticateRequest(key)?.name, 'till-1', 'a request of the same turn');
    assert.is(questions(), 1);

    // The next turn asks again, and refuses the key.
    await nextTurn();
    assert.is(reader.keys.authenticateRequest(key), undefined, 'a request of the next turn');
    assert.is(questions(), 2);
  } finally {
    close();
  }
});

sqlite('a question asked outside a request (the feed watcher, on a timer) is never shared with the requests', async ({ path }) => {
  const { keys, key, reader, close } = keyFixture(path);
  try {
    // A timer runs before the loop polls for requests, in the same turn.
    await sleep(1);
    assert.is(reader.keys.authenticate(key)?.name, 'till-1');
    assert.is(keys.revoke('till-1', 'test', AT), 'revoked');
    assert.is(reader.keys.authenticateRequest(key), undefined, 'the request asks for itself');
  } finally {
    close();
  }
});

sqlite('the writer thread counts each operation that may have committed, before it answers', async ({ path }) => {
  const commits = commitCounter();
  const writer = await startWriterThread(path, {}, undefined, commits);
  try {
    assert.is(Atomics.load(commits, 0), 0);
    await writer.createKey('till-1', 'test', AT);
    assert.is(Atomics.load(commits, 0), 1, 'counted by the time the answer arrives');
    await writer.probeWrite();
    assert.is(Atomics.load(commits, 0), 1, 'a probe, rolled back, changes nothing');
    await writer.revokeKey('till-1', 'test', AT);
    assert.is(Atomics.load(commits, 0), 2);
  } finally {
    await writer.close();
  }
});

sqlite.run();

const KEY_QUERY = `${KEY_TRUST_SQL} WHERE k.hash = $1`;
const LISTENER = "application_name = 'petstore-inventory listener' AND datname = current_database()";

interface PgCtx {
  database: TestDatabase;
  stores: InventoryStore[];
  queries: string[];
}

const postgres = suite<PgCtx>('PostgreSQL: keys in memory while notifications are current', {} as PgCtx);
postgres.before.each(async (ctx) => {
  ctx.database = await freshPostgresDatabase();
  ctx.stores = [];
  ctx.queries = [];
});
postgres.after.each(async (ctx) => {
  for (const store of ctx.stores) await store.close();
  await ctx.database.cleanup();
});

/** Records the text of every query the pool is given. */
/** The state of a PostgreSQL store's notification connection. */
function listenerState(store: InventoryStore): string {
  const shown = store.diagnostics();
  if (shown.store !== 'postgres') throw new Error('a PostgreSQL store has a notification connection');
  return shown.connection.notifications.state;
}

function recording(queries: string[]) {
  return (pool: pg.Pool) => {
    const query = pool.query.bind(pool) as (...args: unknown[]) => unknown;
    (pool as { query: unknown }).query = (...args: unknown[]) => {
      queries.push(typeof args[0] === 'string' ? args[0] : String((args[0] as { text?: string }).text));
      return query(...args);
    };
  };
}

/** Two instances on one database; the first one's pool queries are recorded. */
async function twoInstances(ctx: PgCtx): Promise<[InventoryStore, InventoryStore]> {
  const a = await openPostgresStore(ctx.database.url, { inspectPool: recording(ctx.queries) });
  ctx.stores.push(a);
  const b = await openPostgresStore(ctx.database.url);
  ctx.stores.push(b);
  return [a, b];
}

/** Waits (bounded) until the store answers for key from memory. */
async function fromMemory(store: InventoryStore, key: string): Promise<string | null> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    await store.keys.authenticate(key);
    const verdict = store.keys.authenticateFromMemory(key);
    if (verdict !== undefined) return verdict?.name ?? null;
    if (Date.now() > deadline) throw new Error('the keys were never served from memory within 5 s');
    await sleep(20);
  }
}

async function terminateListeners(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE ${LISTENER}`)).rowCount ?? 0;
  } finally {
    await client.end();
  }
}

/**
 * Whether twenty runs of step in a row ran no query that counts, in one of up to five
 * rounds: a busy machine may hold a heartbeat back past 100 ms now and then (each request
 * then asks the database, as it must), so one clean round is the proof.
 */
async function twentyWithoutQuery(queries: string[], counts: (query: string) => boolean, step: () => Promise<void>): Promise<boolean> {
  for (let round = 0; round < 5; round++) {
    const before = queries.filter(counts).length;
    for (let i = 0; i < 20; i++) await step();
    if (queries.filter(counts).length === before) return true;
    await sleep(50);
  }
  return false;
}

postgres('with its notification connection up, an instance authenticates with no query per request', async (ctx) => {
  const [a, b] = await twoInstances(ctx);
  const key = await b.keys.create('till-1', 'test');
  assert.is(await fromMemory(a, key), 'till-1');
  const clean = await twentyWithoutQuery(
    ctx.queries,
    (q) => q === KEY_QUERY,
    async () => assert.is((await a.keys.authenticate(key))?.name, 'till-1'),
  );
  assert.ok(clean, 'twenty authentications in a row without a key query');
  assert.is(await a.keys.authenticate('pinv_unknownunknownunknownunknown1'), undefined);
});

postgres('GET /v1/inventory through the service makes no key query while notifications are current', async (ctx) => {
  const t = await startApp({
    target: postgresTarget(),
    open: (url, now) => openPostgresStore(url, { now, service: true, inspectPool: recording(ctx.queries) }),
  });
  try {
    await t.track(1, 5);
    assert.is(await fromMemory(t.store, t.key), 'tester');
    // Nothing at all: the key from memory, the list from memory (NOTIFY says it is current).
    const clean = await twentyWithoutQuery(
      ctx.queries,
      () => true,
      async () => assert.is((await t.get()).status, 200),
    );
    assert.ok(clean, `twenty GETs in a row without a query: ${ctx.queries.slice(-5).join(' | ')}`);
    assert.is((await t.get('/v1/inventory', { Authorization: 'Bearer pinv_unknownunknownunknownunknown1' })).status, 401);
  } finally {
    await t.close();
  }
});

postgres('a key revoked or created through another instance is seen within 100 ms', async (ctx) => {
  const [a, b] = await twoInstances(ctx);
  const key = await b.keys.create('till-1', 'test');
  assert.is(await fromMemory(a, key), 'till-1');
  assert.is(await b.keys.revoke('till-1', 'test'), 'revoked');
  const revokedAt = performance.now();
  // The contract: a revoked key stops working at once. Across instances that is the
  // notification's delay; this bound is many times what it takes, so only a missed
  // notification (a request asking the database, or a stale key) fails here. What
  // counts is when a check began: one begun 100 ms after the revocation must refuse,
  // however long a loaded machine then takes to answer it.
  const seenWithin = async (after: number, seen: () => Promise<boolean>, what: string) => {
    for (;;) {
      const began = performance.now() - after;
      if (await seen()) return performance.now() - after;
      assert.ok(began < 100, `${what} within 100 ms (a check begun ${began.toFixed(0)} ms after did not see it)`);
      await sleep(2);
    }
  };
  const refusedAfter = await seenWithin(revokedAt, async () => (await a.keys.authenticate(key)) === undefined, 'refused');
  const second = await b.keys.create('till-2', 'test');
  const createdAt = performance.now();
  await seenWithin(createdAt, async () => (await a.keys.authenticate(second)) !== undefined, 'accepted');
  // The revoking instance itself refuses at its next request.
  assert.is(await b.keys.revoke('till-2', 'test'), 'revoked');
  assert.is(await b.keys.authenticate(second), undefined);
  console.log(`  revocation seen by the other instance after ${refusedAfter.toFixed(1)} ms`);
});

postgres('while the notification connection is down, each request asks the database again', async (ctx) => {
  const [a, b] = await twoInstances(ctx);
  const key = await b.keys.create('till-1', 'test');
  assert.is(await fromMemory(a, key), 'till-1');
  assert.ok((await terminateListeners(ctx.database.url)) >= 1);
  const deadline = Date.now() + 3_000;
  while (listenerState(a) === 'up') {
    if (Date.now() > deadline) throw new Error('the instance did not notice its listener was gone within 3 s');
    await sleep(5);
  }
  // It listens again within a second (changes.ts): everything below runs at once.
  assert.is(a.keys.authenticateFromMemory(key), undefined, 'memory is not trusted now');
  const before = ctx.queries.filter((q) => q === KEY_QUERY).length;
  assert.is((await a.keys.authenticate(key))?.name, 'till-1');
  assert.is(ctx.queries.filter((q) => q === KEY_QUERY).length, before + 1, 'asked the database');
  assert.is(await b.keys.revoke('till-1', 'test'), 'revoked');
  assert.is(await a.keys.authenticate(key), undefined, 'refused at the next request');
  // Listening again, it reads the keys again: the revoked key stays refused from memory.
  assert.is(await fromMemory(a, key), null);
});

postgres.run();
