// scripts/copy-store: a real history on SQLite moved to a fresh PostgreSQL database. The
// copy verifies to the same digest, keeps every event and key as it was, serves the same
// list, accepts the old keys and refuses the revoked one, and chains on; a target that is
// not empty, or a copy that fails midway, leaves the target as it was.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { makeCommandHandler } from '../../src/application/write/commands.ts';
import type { IdempotencyRecord } from '../../src/store/idempotency.ts';
import { openStore } from '../kit/stores.ts';
import { commandsOn, createKey, entriesOf, eventsOf, trackPets } from '../kit/fixtures.ts';
import { root, tempDir } from '../kit/paths.ts';
import { freshPostgresDatabase, type TestDatabase } from '../kit/postgres-server.ts';
import { runScript } from '../kit/scripts.ts';
import { killAll, startService } from '../kit/service.ts';

interface Ctx {
  sqlite: string;
  cleanupSqlite: () => void;
  postgres: TestDatabase;
  key: string;
}

const copy = suite<Ctx>('scripts/copy-store (SQLite to PostgreSQL)');

/** The history every test copies, in a SQLite file; and a fresh, migrated PostgreSQL database. */
async function given(ctx: Ctx): Promise<void> {
  const dir = tempDir('inv-copy-');
  ctx.sqlite = dir.path('inventory.db');
  ctx.cleanupSqlite = () => dir.cleanup();
  ctx.postgres = await freshPostgresDatabase();
  const migrated = await runScript('migrate', [], { db: ctx.postgres.url });
  assert.is(migrated.status, 0, migrated.stderr);
  // The history: tracked pets (one id above 2^53), changes by two keys, one revoked.
  let t = Date.parse('2026-11-21T18:00:00.000Z');
  const now = () => (t += 250);
  const store = await openStore(ctx.sqlite, { now });
  try {
    ctx.key = await createKey(store, 'store-front');
    await createKey(store, 'old-till');
    await trackPets(store, [{ petId: 1, quantity: 5 }, { petId: 9007199254740993n, quantity: 2 }, { petId: 10 }], 'cli:root', now);
    const commands = commandsOn(store, now);
    for (const [petId, quantity] of [
      [1n, 7],
      [9007199254740993n, 12],
      [1n, 6],
      [10n, 3],
    ] as const) {
      await commands.handle({ type: 'SetQuantity', petId, quantity }, { actor: 'store-front', requestId: `r-${petId}-${quantity}` });
    }
    await commands.handle({ type: 'SetStatus', petId: 1n, status: 'pending' }, { actor: 'cli:root', requestId: 'status' });
    assert.is(await store.keys.revoke('old-till', 'cli:root'), 'revoked');
  } finally {
    await store.close();
  }
}

copy.before.each(given);

copy.after.each(async (ctx) => {
  await killAll();
  await ctx.postgres.cleanup();
  ctx.cleanupSqlite();
});

async function rows(url: string, sql: string): Promise<unknown[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<Record<string, unknown>>(sql)).rows;
  } finally {
    await client.end();
  }
}

copy('unexpired idempotency records arrive too, expired ones stay behind: a retry after the move is replayed', async (ctx) => {
  await assertUnexpiredRecordsArrive(ctx.sqlite, ctx.postgres.url);
});

/** Two stored answers in the source, one expired: the copy into to has the other one only. */
async function assertUnexpiredRecordsArrive(from: string, to: string): Promise<void> {
  const store = await openStore(from);
  const record = (key: string, createdAt: number) => ({
    scope: { apiKey: 'store-front', key },
    path: '/v1/inventory/10',
    fingerprint: `f-${key}`,
    answers: {
      applied: () => ({ status: 200, etag: '"9"', body: `{"key":"${key}"}` }),
      refused: () => ({ status: 404, etag: null, body: '{}' }),
    },
    now: createdAt,
  });
  try {
    for (const r of [record('fresh', Date.now()), record('stale', Date.now() - 25 * 3600_000)]) {
      const commands = makeCommandHandler({ store, now: () => r.now });
      await commands.handle({ type: 'SetQuantity', petId: 10n, quantity: 4 }, { actor: 'store-front', requestId: r.scope.key }, r);
    }
  } finally {
    await store.close();
  }
  const r = await runScript('copy-store', ['--from', from, '--to', to]);
  assert.is(r.status, 0, r.stderr);
  assert.match(r.stderr, /\ncopied 1 unexpired idempotency record: /);
  const target = await openStore(to, { mustExist: true });
  try {
    const at = new Date().toISOString();
    const fresh = (await target.idempotency.find({ apiKey: 'store-front', key: 'fresh' }, at)) as IdempotencyRecord | undefined;
    assert.equal([fresh?.fingerprint, fresh?.etag, fresh?.body], ['f-fresh', '"9"', '{"key":"fresh"}']);
    assert.is(await target.idempotency.count(), 1, 'the expired one was not copied');
  } finally {
    await target.close();
  }
}

/** Every event, every key and the projection of store b are those of store a. */
async function assertSameHistory(a: string, b: string): Promise<void> {
  const source = await openStore(a, { readonly: true, mustExist: true });
  const target = await openStore(b, { readonly: true, mustExist: true });
  try {
    assert.equal(await eventsOf(target), await eventsOf(source), 'every event, every column');
    assert.equal(await target.keyRecords(), await source.keyRecords(), 'every key, by hash');
    assert.equal(await entriesOf(target), await entriesOf(source), 'the projection');
  } finally {
    await source.close();
    await target.close();
  }
}

/** The service on the copy serves the list to the old key and takes a PATCH, which chains on at seq 9. */
async function assertServesAndChainsOn(db: string, key: string): Promise<void> {
  const service = await startService({ db, expectKey: false });
  const list = await service.get('/v1/inventory', key);
  assert.is(list.status, 200, 'the old key works on the copy');
  assert.match(list.text, /"petId":9007199254740993,"quantity":12/);
  const patched = await service.request({
    method: 'PATCH',
    path: '/v1/inventory/10',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: '{"quantity": 4}',
  });
  assert.is(patched.status, 200, patched.text);
  await service.stop();
  const verified = await runScript('verify-log', [], { db });
  assert.is(verified.status, 0, verified.stderr);
  assert.match(verified.stdout, /^9:[0-9a-f]{64}\n$/, 'the next event chains on at seq 9');
}

copy('events, keys and the projection arrive verbatim; equal digests; the copy serves and chains on', async (ctx) => {
  const r = await runScript('copy-store', ['--from', ctx.sqlite, '--to', ctx.postgres.url]);
  assert.is(r.status, 0, r.stderr);
  assert.match(r.stderr, /^copied 8 events, 2 keys and 3 inventory rows from /);
  assert.not.match(r.stderr + r.stdout, new RegExp(new URL(ctx.postgres.url).password), 'no password printed');
  const digests = [...r.stdout.matchAll(/digest (\d+:[0-9a-f]{64})/g)].map((m) => m[1]);
  assert.is(digests.length, 2, r.stdout);
  assert.is(digests[0], digests[1]);
  assert.match(r.stdout, /digests equal\n$/);

  await assertSameHistory(ctx.sqlite, ctx.postgres.url);

  const revoked = await rows(ctx.postgres.url, "SELECT revoked_by FROM api_keys WHERE name = 'old-till'");
  assert.equal(revoked, [{ revoked_by: 'cli:root' }]);
  await assertServesAndChainsOn(ctx.postgres.url, ctx.key);
});

copy('a target that is not empty is refused, and nothing changes', async (ctx) => {
  const store = await openStore(ctx.postgres.url, { mustExist: true });
  try {
    await trackPets(store, [{ petId: 77 }]);
  } finally {
    await store.close();
  }
  const before = await rows(ctx.postgres.url, 'SELECT seq, hash FROM events ORDER BY seq');
  const r = await runScript('copy-store', ['--from', ctx.sqlite, '--to', ctx.postgres.url]);
  assert.is(r.status, 1);
  assert.is(r.stderr, 'error: the target is not empty (it has events, inventory rows): nothing was copied\n');
  assert.equal(await rows(ctx.postgres.url, 'SELECT seq, hash FROM events ORDER BY seq'), before);
});

copy('a copy that fails midway leaves the target empty', async (ctx) => {
  // The target refuses one row (the last event), after the others went in.
  await rows(
    ctx.postgres.url,
    `CREATE FUNCTION refuse_seq_8() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN IF NEW.seq = 8 THEN RAISE EXCEPTION 'refused seq 8'; END IF; RETURN NEW; END $$;
     CREATE TRIGGER refuse_seq_8 BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION refuse_seq_8();`,
  );
  const r = await runScript('copy-store', ['--from', ctx.sqlite, '--to', ctx.postgres.url]);
  assert.is(r.status, 1);
  assert.match(r.stderr, /^error: refused seq 8\n$/);
  assert.equal(await rows(ctx.postgres.url, 'SELECT count(*)::int AS n FROM events'), [{ n: 0 }]);
  assert.equal(await rows(ctx.postgres.url, 'SELECT count(*)::int AS n FROM api_keys'), [{ n: 0 }]);
  assert.equal(await rows(ctx.postgres.url, 'SELECT count(*)::int AS n FROM inventory'), [{ n: 0 }]);
  assert.equal(await rows(ctx.postgres.url, 'SELECT seq::int FROM chain_head'), [{ seq: 0 }]);
});

copy('usage errors exit 2 with one line and see --help', async (ctx) => {
  for (const args of [[], ['--from', ctx.sqlite], ['--from', ctx.sqlite, '--to', ctx.sqlite], ['--db', ctx.sqlite]]) {
    const r = await runScript('copy-store', args);
    assert.is(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, /^error: [^\n]+\nsee --help\n$/);
  }
});

copy('a target without the schema: the scripts/migrate command it suggests can be pasted as printed', async (ctx) => {
  const bare = await freshPostgresDatabase();
  try {
    const refused = await runScript('copy-store', ['--from', ctx.sqlite, '--to', bare.url]);
    assert.is(refused.status, 1, refused.stderr);
    const password = new URL(bare.url).password;
    assert.ok(password !== '', 'the test database has a password');
    assert.not.ok(refused.stderr.includes(password), 'the password is not shown');
    const suggested = /run (scripts\/migrate --db '[^']+')( \(the password is left out: set PGPASSWORD, or put it back in the URL\))/.exec(
      refused.stderr,
    );
    assert.ok(suggested, refused.stderr);
    const env: NodeJS.ProcessEnv = { ...process.env, PGPASSWORD: password };
    delete env.INVENTORY_DB;
    const pasted = spawnSync('sh', ['-c', suggested[1]!.replace('scripts/migrate', join(root, 'scripts/migrate'))], {
      env,
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.is(pasted.status, 0, `${suggested[1]}\n${pasted.stdout}${pasted.stderr}`);
    const copied = await runScript('copy-store', ['--from', ctx.sqlite, '--to', bare.url]);
    assert.is(copied.status, 0, copied.stderr);
  } finally {
    await bare.cleanup();
  }
});

copy.run();

// The other ways: PostgreSQL into a SQLite file (an auditor's offline copy, a move back to
// one host) and SQLite into SQLite, by the same rules.
const back = suite<Ctx & { copies: ReturnType<typeof tempDir> }>('scripts/copy-store (into SQLite)');

back.before.each(async (ctx) => {
  await given(ctx);
  ctx.copies = tempDir('inv-copy-back-');
});

/** A new SQLite file with the current schema and nothing in it, as scripts/migrate makes it. */
async function emptySqlite(path: string): Promise<string> {
  const migrated = await runScript('migrate', [], { db: path });
  assert.is(migrated.status, 0, migrated.stderr);
  return path;
}

/** Copies from into to; both digests printed and equal. */
async function copied(from: string, to: string): Promise<string> {
  const r = await runScript('copy-store', ['--from', from, '--to', to]);
  assert.is(r.status, 0, r.stderr);
  assert.match(r.stderr, /^copied 8 events, 2 keys and 3 inventory rows from /);
  const digests = [...r.stdout.matchAll(/digest (\d+:[0-9a-f]{64})/g)].map((m) => m[1]);
  assert.is(digests.length, 2, r.stdout);
  assert.is(digests[0], digests[1]);
  assert.match(r.stdout, /digests equal\n$/);
  return digests[0]!;
}

back('PostgreSQL into SQLite, and SQLite into SQLite: verbatim, equal digests; the copy serves and chains on', async (ctx) => {
  const original = await copied(ctx.sqlite, ctx.postgres.url);
  const offline = await emptySqlite(ctx.copies.path('offline.db'));
  assert.is(await copied(ctx.postgres.url, offline), original, 'the same digest as the original history');
  await assertSameHistory(ctx.postgres.url, offline);
  const again = await emptySqlite(ctx.copies.path('again.db'));
  assert.is(await copied(offline, again), original);
  await assertSameHistory(offline, again);

  await assertServesAndChainsOn(again, ctx.key);
});

back('into SQLite too, the unexpired idempotency records arrive and the expired ones stay behind', async (ctx) => {
  await assertUnexpiredRecordsArrive(ctx.sqlite, await emptySqlite(ctx.copies.path('records.db')));
});

back('a SQLite target that is not empty is refused, and nothing changes', async (ctx) => {
  const target = await emptySqlite(ctx.copies.path('busy.db'));
  const store = await openStore(target, { mustExist: true });
  try {
    await trackPets(store, [{ petId: 77 }]);
  } finally {
    await store.close();
  }
  const r = await runScript('copy-store', ['--from', ctx.sqlite, '--to', target]);
  assert.is(r.status, 1);
  assert.is(r.stderr, 'error: the target is not empty (it has events, inventory rows): nothing was copied\n');
  const after = await openStore(target, { readonly: true, mustExist: true });
  try {
    assert.is((await eventsOf(after)).length, 1);
  } finally {
    await after.close();
  }
});

back('a copy into SQLite that fails midway leaves the target empty', async (ctx) => {
  const target = await emptySqlite(ctx.copies.path('refusing.db'));
  const db = new Database(target);
  db.exec(`CREATE TRIGGER refuse_seq_8 BEFORE INSERT ON events WHEN NEW.seq = 8 BEGIN SELECT RAISE(ABORT, 'refused seq 8'); END`);
  db.close();
  await copied(ctx.sqlite, ctx.postgres.url);
  const r = await runScript('copy-store', ['--from', ctx.postgres.url, '--to', target]);
  assert.is(r.status, 1);
  assert.match(r.stderr, /^error: the database refused the operation \(SQLITE_CONSTRAINT_TRIGGER\)\n$/);
  const check = new Database(target, { readonly: true });
  try {
    for (const table of ['events', 'api_keys', 'inventory']) {
      assert.is(check.prepare(`SELECT count(*) FROM ${table}`).pluck().get(), 0, table);
    }
  } finally {
    check.close();
  }
});

back.after.each(async (ctx) => {
  await killAll();
  await ctx.postgres.cleanup();
  ctx.cleanupSqlite();
  ctx.copies.cleanup();
});

back.run();
