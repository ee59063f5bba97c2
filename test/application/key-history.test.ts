// Key history is part of the audit trail: api_keys is append-only for every role (the
// only change a key may get is its revocation, once), each creation and revocation is an
// event of the key log with a hash chain of its own, and verify-log holds api_keys to
// that log. Someone past the guards who deletes a key, recreates it or back-dates its
// revocation is caught, on every store; with the key log rewritten too, by a saved digest.
import { copyFileSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { openDatabase } from '../../src/store/sqlite/database.ts';
import { formatDigest, type Digest } from '../../src/store/hash-chain.ts';
import { loadMigrations, migrate } from '../../src/store/sqlite/migrate.ts';
import { migratePostgres, postgresMigrations } from '../../src/store/postgres/schema.ts';
import { sqliteStoreOn } from '../../src/store/sqlite/store.ts';
import type { InventoryStore } from '../../src/store/port.ts';
import { verifyLog, type Verdict } from '../../src/application/verify/verify-log.ts';
import { commandsOn } from '../kit/fixtures.ts';
import { tempDir } from '../kit/paths.ts';
import { freshPostgresDatabase } from '../kit/postgres-server.ts';
import { runScriptSync } from '../kit/scripts.ts';
import { openStore, type FreshDatabase } from '../kit/stores.ts';
import { targetSuites, type OnTarget } from '../kit/suites.ts';
import { rewriteKeyChainSql } from '../kit/tamper.ts';

interface Ctx {
  fresh: FreshDatabase;
  /** The key log's digest before any tampering. */
  keysDigest: Digest;
}

/** Three keys, one revoked after it set a quantity, on a fixed clock. */
async function keyHistory(store: InventoryStore, now: () => number): Promise<void> {
  await store.keys.createFirst('bootstrap', 'service');
  await store.keys.create('warehouse', 'cli:ops');
  await store.keys.create('store-front', 'cli:ops');
  const commands = commandsOn(store, now);
  await commands.handle({ type: 'TrackPet', petId: 1n, quantity: 5, status: 'available' }, { actor: 'cli:ops', requestId: 'r1' });
  await commands.handle({ type: 'SetQuantity', petId: 1n, quantity: 3 }, { actor: 'warehouse', requestId: 'r2' });
  assert.is(await store.keys.revoke('warehouse', 'cli:ops'), 'revoked');
}

const keys = targetSuites<Ctx>('key history under the chain', {
  async beforeEach(ctx) {
    ctx.fresh = await ctx.target.fresh();
    let t = Date.parse('2026-05-01T00:00:00.000Z');
    const now = () => (t += 1000);
    const store = await ctx.target.open(ctx.fresh.db, { now });
    try {
      await keyHistory(store, now);
    } finally {
      await store.close();
    }
    const verdict = await verify(ctx);
    assert.ok(verdict.ok, JSON.stringify(verdict));
    ctx.keysDigest = verdict.ok ? verdict.keyHead : { seq: 0, hash: '' };
  },
  async afterEach(ctx) {
    await ctx.fresh.cleanup();
  },
});

async function verify({ target, fresh }: Ctx & OnTarget, digests: Digest[] = []): Promise<Verdict> {
  const store = await target.open(fresh.db, { readonly: true });
  try {
    return await verifyLog(store, digests);
  } finally {
    await store.close();
  }
}

keys('each creation and revocation is an event of the key log, chained; verify-log gives its digest', async (ctx) => {
  const store = await ctx.target.open(ctx.fresh.db, { readonly: true });
  try {
    const history = await store.keyHistory();
    assert.equal(
      history.events.map(([seq, type, name, , , actor]) => [Number(seq), type, name, actor]),
      [
        [1, 'KeyCreated', 'bootstrap', 'service'],
        [2, 'KeyCreated', 'warehouse', 'cli:ops'],
        [3, 'KeyCreated', 'store-front', 'cli:ops'],
        [4, 'KeyRevoked', 'warehouse', 'cli:ops'],
      ],
    );
    const warehouse = history.keys.find((k) => k.name === 'warehouse')!;
    assert.equal([warehouse.revokedAt, warehouse.revokedBy], [history.events[3]![4], 'cli:ops']);
    assert.equal(history.counters, { events: 2, keys: 4 });
    const head = await store.logHead();
    assert.equal(head.keys, { seq: 4, hash: history.events[3]![7] });
  } finally {
    await store.close();
  }
  assert.equal(ctx.keysDigest.chain, 'keys');
  const r = runScriptSync('verify-log', ['--digest', formatDigest(ctx.keysDigest)], { db: ctx.fresh.db });
  assert.is(r.status, 0, r.stderr);
  assert.match(r.stderr, /; it extends keys:4:[0-9a-f]{64}\nok: 4 key events, key chain intact, api_keys agrees\nok: the projection/);
});

keys('api_keys and the key log refuse deletes and edits, also from the owner; a revocation only with its event', async (ctx) => {
  const refused = [
    "DELETE FROM api_keys WHERE name = 'store-front'",
    `UPDATE api_keys SET revoked_at = '2026-01-01T00:00:00.000Z' WHERE name = 'warehouse'`,
    "UPDATE api_keys SET created_by = 'cli:someone' WHERE name = 'store-front'",
    "UPDATE api_keys SET revoked_at = '2026-06-01T00:00:00.000Z', revoked_by = 'cli:ops' WHERE name = 'store-front'",
    "INSERT INTO api_keys (name, hash, created_at, created_by) VALUES ('ghost', 'abc', '2026-06-01T00:00:00.000Z', 'cli:ops')",
    "DELETE FROM api_key_events WHERE name = 'warehouse'",
    "UPDATE api_key_events SET recorded_at = '2026-01-01T00:00:00.000Z' WHERE type = 'KeyRevoked'",
  ];
  for (const sql of refused) {
    const error = await ctx.target.tamper.asOwner(ctx.fresh.db, sql).then(
      () => undefined,
      (e: Error) => e,
    );
    assert.match(error?.message ?? 'accepted', /append-only|key chain/, sql);
  }
  assert.ok((await verify(ctx)).ok, 'nothing changed');
});

keys('a key deleted from api_keys is caught, and its name stays taken', async (ctx) => {
  await ctx.target.tamper.pastGuards(ctx.fresh.db, "DELETE FROM api_keys WHERE name = 'warehouse'");
  const r = runScriptSync('verify-log', [], { db: ctx.fresh.db });
  assert.is(r.status, 1);
  assert.is(r.stderr, 'error: BROKEN at key seq 2: key "warehouse" is in the key log but not in api_keys: it was deleted\n');
  const again = runScriptSync('keys', ['create', 'warehouse'], { db: ctx.fresh.db });
  assert.is(again.status, 1);
  assert.match(again.stderr, /^error: a key named "warehouse" exists already/);
});

keys('a revocation back-dated is caught, in api_keys or in the key log', async (ctx) => {
  await ctx.target.tamper.pastGuards(ctx.fresh.db, "UPDATE api_keys SET revoked_at = '2026-05-01T00:00:03.500Z' WHERE name = 'warehouse'");
  let verdict = await verify(ctx);
  assert.equal(verdict.ok ? 'intact' : [verdict.chain, verdict.seq, verdict.reason.includes('revocation was changed')], ['keys', 4, true]);
  await ctx.target.tamper.pastGuards(
    ctx.fresh.db,
    "UPDATE api_key_events SET recorded_at = '2026-05-01T00:00:03.500Z' WHERE name = 'warehouse' AND type = 'KeyRevoked'",
  );
  verdict = await verify(ctx);
  assert.equal(verdict.ok ? 'intact' : [verdict.chain, verdict.seq, verdict.reason.includes('field')], ['keys', 4, true]);
});

keys('a key deleted and recreated is caught; with the key log rewritten too, by the saved digests', async (ctx) => {
  // A digest an auditor kept when the second key had just been created.
  const before = await ctx.target.open(ctx.fresh.db, { readonly: true });
  const second: Digest = { seq: 2, hash: (await before.keyHistory()).events[1]![7], chain: 'keys' };
  await before.close();
  await ctx.target.tamper.pastGuards(
    ctx.fresh.db,
    "DELETE FROM api_keys WHERE name = 'warehouse'; DELETE FROM api_key_events WHERE name = 'warehouse'",
  );
  const created = runScriptSync('keys', ['create', 'warehouse'], { db: ctx.fresh.db });
  assert.is(created.status, 0, created.stderr);
  let verdict = await verify(ctx);
  assert.equal(verdict.ok ? 'intact' : [verdict.chain, verdict.seq, verdict.reason.includes('prev_hash')], ['keys', 3, true]);

  const store = await ctx.target.open(ctx.fresh.db, { readonly: true });
  const { events } = await store.keyHistory();
  await store.close();
  await ctx.target.tamper.pastGuards(ctx.fresh.db, rewriteKeyChainSql(events, ctx.target.name));
  // The rewritten key log is consistent, but the recreated key was made after the event
  // made in its name.
  verdict = await verify(ctx);
  assert.equal(verdict.ok ? 'intact' : [verdict.chain, verdict.seq, verdict.reason.includes('became a key only at')], [undefined, 2, true]);
  verdict = await verify(ctx, [ctx.keysDigest]);
  assert.equal(verdict.ok ? 'intact' : [verdict.chain, verdict.seq, verdict.reason.includes('truncated')], ['keys', 4, true]);
  const r = runScriptSync('verify-log', ['--digest', formatDigest(second)], { db: ctx.fresh.db });
  assert.is(r.status, 1);
  assert.match(r.stderr, /^error: BROKEN at key seq 2: .*rewritten/);
});

keys('a cut tail of the key log is caught by its counter', async (ctx) => {
  await ctx.target.tamper.pastGuards(
    ctx.fresh.db,
    "DELETE FROM api_key_events WHERE type = 'KeyRevoked'; UPDATE api_keys SET revoked_at = NULL, revoked_by = NULL",
  );
  const verdict = await verify(ctx);
  assert.equal(verdict.ok ? 'intact' : [verdict.chain, verdict.seq, verdict.reason.includes('cut off')], ['keys', 4, true]);
});

keys.run();

// Databases made before key history was chained keep their keys: the upgrade enters
// them in the key log in the order they were created and revoked, and guards the table.
const OLD_KEYS = `
INSERT INTO api_keys (name, hash, created_at, created_by, revoked_at, revoked_by) VALUES
  ('warehouse', '${'a'.repeat(64)}', '2026-01-02T00:00:00.000Z', 'cli:ops', '2026-01-04T00:00:00.000Z', 'cli:ops'),
  ('bootstrap', '${'b'.repeat(64)}', '2026-01-01T00:00:00.000Z', 'service', NULL, NULL),
  ('store-front', '${'c'.repeat(64)}', '2026-01-03T00:00:00.000Z', 'cli:ops', NULL, NULL);`;

async function checkUpgraded(store: InventoryStore): Promise<void> {
  const history = await store.keyHistory();
  assert.equal(
    history.events.map(([seq, type, name, , at]) => [Number(seq), type, name, at]),
    [
      [1, 'KeyCreated', 'bootstrap', '2026-01-01T00:00:00.000Z'],
      [2, 'KeyCreated', 'warehouse', '2026-01-02T00:00:00.000Z'],
      [3, 'KeyCreated', 'store-front', '2026-01-03T00:00:00.000Z'],
      [4, 'KeyRevoked', 'warehouse', '2026-01-04T00:00:00.000Z'],
    ],
  );
  assert.is(history.keys.length, 3);
  const verdict = await verifyLog(store);
  assert.ok(verdict.ok && verdict.keyEvents === 4, JSON.stringify(verdict));
  // New keys continue the chain.
  await store.keys.create('audit-bot', 'cli:ops');
  const after = await verifyLog(store, verdict.ok ? [verdict.keyHead] : []);
  assert.ok(after.ok && after.keyEvents === 5, JSON.stringify(after));
}

const upgradeSqlite = suite('key history on a SQLite database of the previous version');
upgradeSqlite('existing keys enter the key log, chained; api_keys is guarded from then on', async () => {
  const scratch = tempDir('inv-keys-');
  try {
    const older = join(scratch.dir, 'migrations');
    mkdirSync(older);
    const dir = new URL('../../migrations/sqlite/', import.meta.url);
    for (const f of readdirSync(dir).filter((f) => f.endsWith('.sql') && Number.parseInt(f, 10) < 7))
      copyFileSync(new URL(f, dir), join(older, f));
    const path = join(scratch.dir, 'inv.db');
    const db = new Database(path);
    migrate(db, loadMigrations(`${older}/`));
    db.exec(OLD_KEYS);
    db.close();
    const upgraded = openDatabase(path);
    try {
      await checkUpgraded(sqliteStoreOn(upgraded));
      assert.throws(() => upgraded.exec("DELETE FROM api_keys WHERE name = 'warehouse'"), /append-only/);
    } finally {
      upgraded.close();
    }
  } finally {
    scratch.cleanup();
  }
});
upgradeSqlite.run();

const upgradePostgres = suite('key history on a PostgreSQL database of the previous version');
upgradePostgres('existing keys enter the key log, chained; api_keys is guarded from then on', async () => {
  const database = await freshPostgresDatabase();
  try {
    const pool = new pg.Pool({ connectionString: database.url });
    try {
      await migratePostgres(
        pool,
        'test',
        postgresMigrations().filter((m) => m.version < 2),
      );
      await pool.query(OLD_KEYS);
    } finally {
      await pool.end();
    }
    const store = await openStore(database.url);
    try {
      await checkUpgraded(store);
    } finally {
      await store.close();
    }
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      const error = await client.query("DELETE FROM api_keys WHERE name = 'warehouse'").then(
        () => undefined,
        (e: Error) => e,
      );
      assert.match(error?.message ?? 'accepted', /append-only/);
    } finally {
      await client.end();
    }
  } finally {
    await database.cleanup();
  }
});
upgradePostgres.run();
