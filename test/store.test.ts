// The database: migrations, the append-only log, the projection written with it, the
// auditors' view, and the all-or-nothing append.
import { mkdtempSync, rmSync, writeFileSync, mkdirSync, readdirSync, copyFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { CommandHandler } from '../src/commands.ts';
import { openDatabase, type Db } from '../src/store/database.ts';
import { loadMigrations, migrate } from '../src/store/migrate.ts';
import { sqliteStoreOn } from '../src/store/sqlite/store.ts';
import { commandsOn } from './helpers.ts';

interface Ctx {
  db: Db;
  commands: CommandHandler;
}

const meta = (actor = 'k1', requestId = 'r') => ({ actor, requestId });

const log = suite<Ctx>('the event log');
log.before.each((ctx) => {
  ctx.db = openDatabase(':memory:');
  let t = Date.parse('2026-03-04T05:06:07.089Z');
  ctx.commands = commandsOn(ctx.db, () => (t += 1000));
});
log.after.each((ctx) => {
  ctx.db.close();
});

log('UPDATE and DELETE on events are refused by triggers, whoever connects', async ({ db, commands }) => {
  await commands.handle({ type: 'TrackPet', petId: 1n, quantity: 1, status: 'available' }, meta());
  assert.throws(() => db.exec("UPDATE events SET actor = 'someone else'"), /append-only/);
  assert.throws(() => db.exec('DELETE FROM events'), /append-only/);
  assert.is(db.prepare('SELECT count(*) FROM events').pluck().get(), 1);
});

log('the projection row is written in the same transaction as the event', async ({ db, commands }) => {
  await commands.handle({ type: 'TrackPet', petId: 5n, quantity: 2, status: 'pending' }, meta());
  await commands.handle({ type: 'SetQuantity', petId: 5n, quantity: 6 }, meta());
  const row = db.prepare('SELECT pet_id, quantity, status, version, updated_at FROM inventory').get();
  assert.equal(row, { pet_id: 5, quantity: 6, status: 'pending', version: 2, updated_at: '2026-03-04T05:06:09.089Z' });
});

log('a failure inside the transaction leaves neither event nor row', async ({ db, commands }) => {
  await commands.handle({ type: 'TrackPet', petId: 5n, quantity: 2, status: 'pending' }, meta());
  // The projection refuses a quantity the domain would never decide (CHECK constraint).
  const [outcome] = await sqliteStoreOn(db).appendBatch([
    {
      meta: meta(),
      recordedAt: new Date().toISOString(),
      appends: [{ petId: 5n, expectedVersion: 1, events: [{ type: 'QuantitySet', data: { quantity: -5 } }] }],
    },
  ]);
  assert.ok(outcome && !outcome.ok, 'the append failed');
  assert.match(String((outcome as { error: Error }).error.message), /CHECK constraint/);
  assert.is(db.prepare('SELECT count(*) FROM events').pluck().get(), 1);
  assert.is(db.prepare('SELECT quantity FROM inventory').pluck().get(), 2);
});

log('a projection row edited by hand cannot put a gap into the log', async ({ db, commands }) => {
  await commands.handle({ type: 'TrackPet', petId: 5n, quantity: 2, status: 'pending' }, meta());
  await commands.handle({ type: 'SetQuantity', petId: 5n, quantity: 3 }, meta());
  db.exec("UPDATE inventory SET version = 10, quantity = 999, status = 'sold' WHERE pet_id = 5");
  const entry = await commands.handle({ type: 'SetQuantity', petId: 5n, quantity: 4, precondition: (v) => v === 2 }, meta());
  assert.equal({ quantity: entry.quantity, status: entry.status, version: entry.version }, { quantity: 4, status: 'pending', version: 3 });
  assert.equal(db.prepare('SELECT version FROM events WHERE pet_id = 5 ORDER BY seq').pluck().all(), [1, 2, 3]);
  assert.equal(db.prepare('SELECT quantity, status, version FROM inventory WHERE pet_id = 5').get(), {
    quantity: 4,
    status: 'pending',
    version: 3,
  });
});

log('handleAll is all or nothing', async ({ db, commands }) => {
  await commands.handle({ type: 'TrackPet', petId: 2n, quantity: 0, status: 'available' }, meta());
  let refused = false;
  try {
    await commands.handleAll(
      [1n, 2n, 3n].map((petId) => ({ type: 'TrackPet' as const, petId, quantity: 0, status: 'available' as const })),
      meta(),
    );
  } catch {
    refused = true;
  }
  assert.ok(refused);
  assert.equal(db.prepare('SELECT pet_id FROM inventory').pluck().all(), [2]);
  assert.is(db.prepare('SELECT count(*) FROM events').pluck().get(), 1);
});

log('seq is never reused', async ({ db, commands }) => {
  await commands.handle({ type: 'TrackPet', petId: 1n, quantity: 0, status: 'available' }, meta());
  const ddl = db.prepare("SELECT sql FROM sqlite_master WHERE name = 'events'").pluck().get() as string;
  assert.match(ddl, /seq\s+INTEGER PRIMARY KEY AUTOINCREMENT/);
});

log('stock_adjustments: one row per QuantitySet with previous quantity, delta, actor and request id', async ({ db, commands }) => {
  await commands.handle({ type: 'TrackPet', petId: 9007199254740993n, quantity: 10, status: 'available' }, meta('cli:ops', 't1'));
  await commands.handle({ type: 'TrackPet', petId: 2n, quantity: 1, status: 'available' }, meta('cli:ops', 't2'));
  await commands.handle({ type: 'SetQuantity', petId: 9007199254740993n, quantity: 7 }, meta('alice', 'a1'));
  await commands.handle({ type: 'SetStatus', petId: 9007199254740993n, status: 'sold' }, meta('cli:ops', 's1'));
  await commands.handle({ type: 'SetQuantity', petId: 9007199254740993n, quantity: 7 }, meta('bob', 'b1'));
  await commands.handle({ type: 'SetQuantity', petId: 2n, quantity: 4 }, meta('bob', 'b2'));
  const rows = db
    .prepare('SELECT seq, recorded_at, pet_id, previous_quantity, quantity, delta, actor, request_id FROM stock_adjustments ORDER BY seq')
    .safeIntegers(true)
    .all();
  assert.equal(rows, [
    {
      seq: 3n,
      recorded_at: '2026-03-04T05:06:10.089Z',
      pet_id: 9007199254740993n,
      previous_quantity: 10n,
      quantity: 7n,
      delta: -3n,
      actor: 'alice',
      request_id: 'a1',
    },
    {
      seq: 5n,
      recorded_at: '2026-03-04T05:06:12.089Z',
      pet_id: 9007199254740993n,
      previous_quantity: 7n,
      quantity: 7n,
      delta: 0n,
      actor: 'bob',
      request_id: 'b1',
    },
    {
      seq: 6n,
      recorded_at: '2026-03-04T05:06:13.089Z',
      pet_id: 2n,
      previous_quantity: 1n,
      quantity: 4n,
      delta: 3n,
      actor: 'bob',
      request_id: 'b2',
    },
  ]);
});

log.run();

const migrations = suite('migrations');

migrations('a new database gets every migration once; a second run applies nothing', () => {
  const db = new Database(':memory:');
  const all = loadMigrations();
  assert.ok(all.length >= 4);
  assert.equal(
    migrate(db),
    all.map((m) => m.name),
  );
  assert.equal(migrate(db), []);
  assert.equal(
    db.prepare('SELECT version FROM schema_migrations ORDER BY version').pluck().all(),
    all.map((m) => m.version),
  );
  db.close();
});

migrations('a database made by an older version upgrades in place, its history intact', () => {
  const dir = mkdtempSync(join(tmpdir(), 'inv-migrate-'));
  try {
    const older = join(dir, 'older');
    mkdirSync(older);
    const files = readdirSync(new URL('../migrations/', import.meta.url))
      .filter((f) => f.endsWith('.sql'))
      .sort();
    for (const f of files.slice(0, 2)) copyFileSync(new URL(`../migrations/${f}`, import.meta.url), join(older, f));
    const path = join(dir, 'inv.db');
    const db = new Database(path);
    migrate(db, loadMigrations(`${older}/`));
    db.prepare(
      "INSERT INTO events (pet_id, version, type, data, actor, request_id, recorded_at) VALUES (1, 1, 'PetTracked', '{\"quantity\":2,\"status\":\"available\",\"schemaVersion\":1}', 'cli:x', 'r', '2026-01-01T00:00:00.000Z')",
    ).run();
    db.close();
    const upgraded = openDatabase(path);
    assert.is(upgraded.prepare('SELECT count(*) FROM schema_migrations').pluck().get(), loadMigrations().length);
    assert.is(upgraded.prepare('SELECT count(*) FROM events').pluck().get(), 1);
    assert.is(upgraded.prepare("SELECT count(*) FROM sqlite_master WHERE name = 'stock_adjustments'").pluck().get(), 1);
    upgraded.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

migrations('a failing migration leaves the database as it was', () => {
  const dir = mkdtempSync(join(tmpdir(), 'inv-migrate-'));
  try {
    writeFileSync(join(dir, '001-good.sql'), 'CREATE TABLE a (x);');
    writeFileSync(join(dir, '002-bad.sql'), 'CREATE TABLE b (x); THIS IS NOT SQL;');
    const db = new Database(':memory:');
    assert.throws(() => migrate(db, loadMigrations(`${dir}/`)));
    assert.is(db.prepare("SELECT count(*) FROM sqlite_master WHERE name IN ('a', 'b')").pluck().get(), 0);
    db.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

migrations('the file is in WAL mode with synchronous FULL', () => {
  const dir = mkdtempSync(join(tmpdir(), 'inv-wal-'));
  try {
    const db = openDatabase(join(dir, 'sub', 'inv.db'));
    assert.is(db.pragma('journal_mode', { simple: true }), 'wal');
    assert.is(db.pragma('synchronous', { simple: true }), 2);
    db.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

migrations.run();
