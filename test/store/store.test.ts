// The database: migrations, the append-only log, the projection written with it, the
// auditors' view, and the all-or-nothing append.
import { writeFileSync, mkdirSync, readdirSync, copyFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { appliedEntry, type CommandHandler } from '../../src/application/write/commands.ts';
import { CommitFailed } from '../../src/application/write/group-commit.ts';
import { openDatabase, type Db } from '../../src/store/sqlite/database.ts';
import { loadMigrations, migrate } from '../../src/store/sqlite/migrate.ts';
import type { AdjustmentRow } from '../../src/store/audit-reads.ts';
import { StoreUnavailable } from '../../src/store/health.ts';
import type { InventoryStore } from '../../src/store/port.ts';
import type { Entry } from '../../src/store/projection.ts';
import { sqliteStoreOn } from '../../src/store/sqlite/store.ts';
import { commandsOn, entriesOf, eventsOf } from '../kit/fixtures.ts';
import { tempDir } from '../kit/paths.ts';
import { targetSuites } from '../kit/suites.ts';

interface Ctx {
  db: string;
  cleanup: () => Promise<void>;
  store: InventoryStore;
  commands: CommandHandler;
}

const meta = (actor = 'k1', requestId = 'r') => ({ actor, requestId });

const log = targetSuites<Ctx>('the event log', {
  async beforeEach(ctx) {
    const fresh = await ctx.target.fresh();
    ctx.db = fresh.db;
    ctx.cleanup = fresh.cleanup;
    let t = Date.parse('2026-03-04T05:06:07.089Z');
    const now = () => (t += 1000);
    ctx.store = await ctx.target.open(fresh.db, { now });
    ctx.commands = commandsOn(ctx.store, now);
  },
  async afterEach(ctx) {
    await ctx.store.close();
    await ctx.cleanup();
  },
});

const shape = (e: Entry) => ({ petId: e.petId, quantity: e.quantity, status: e.status, version: e.version, updatedAt: e.updatedAt });

log('the projection row is written in the same transaction as the event', async ({ store, commands }) => {
  await commands.handle({ type: 'TrackPet', petId: 5n, quantity: 2, status: 'pending' }, meta());
  await commands.handle({ type: 'SetQuantity', petId: 5n, quantity: 6 }, meta());
  assert.equal((await entriesOf(store)).map(shape), [
    { petId: 5n, quantity: 6, status: 'pending', version: 2, updatedAt: '2026-03-04T05:06:09.089Z' },
  ]);
});

log('a failure inside the transaction leaves neither event nor row', async ({ store, commands }) => {
  await commands.handle({ type: 'TrackPet', petId: 5n, quantity: 2, status: 'pending' }, meta());
  // The projection refuses a quantity the domain would never decide (CHECK constraint).
  const [outcome] = await store.appendBatch([
    {
      meta: meta(),
      recordedAt: new Date().toISOString(),
      appends: [{ petId: 5n, expectedVersion: 1, events: [{ type: 'QuantitySet', data: { quantity: -5 } }] }],
    },
  ]);
  assert.ok(outcome && !outcome.ok, 'the append failed');
  assert.match(String((outcome as { error: Error }).error.message), /check constraint/i);
  assert.is((await eventsOf(store)).length, 1);
  assert.equal(
    (await entriesOf(store)).map((e) => e.quantity),
    [2],
  );
});

log(
  'a batch whose write fails halfway: exactly the failing submission fails, the others are written and chained',
  async ({ store, commands }) => {
    for (const petId of [1n, 2n, 3n]) await commands.handle({ type: 'TrackPet', petId, quantity: 1, status: 'available' }, meta());
    const set = (petId: bigint, quantity: number, requestId: string) => ({
      meta: meta('k1', requestId),
      recordedAt: new Date().toISOString(),
      appends: [{ petId, expectedVersion: 1, events: [{ type: 'QuantitySet' as const, data: { quantity } }] }],
    });
    // The second breaks the projection's CHECK constraint after the first was written.
    const outcomes = await store.appendBatch([set(1n, 7, 'a'), set(2n, -5, 'b'), set(3n, 9, 'c')]);
    assert.equal(
      outcomes.map((o) => o.ok),
      [true, false, true],
    );
    const events = await eventsOf(store);
    assert.equal(
      events.map((e) => [e.seq, e.petId, e.requestId]),
      [
        [1n, 1n, 'r'],
        [2n, 2n, 'r'],
        [3n, 3n, 'r'],
        [4n, 1n, 'a'],
        [5n, 3n, 'c'],
      ],
    );
    assert.equal(
      (await entriesOf(store)).map((e) => [e.petId, e.quantity, e.version]),
      [
        [1n, 7, 2],
        [2n, 1, 1],
        [3n, 9, 2],
      ],
    );
    // What follows is chained to the batch's last event, and each event to the one before.
    await commands.handle({ type: 'SetQuantity', petId: 2n, quantity: 4 }, meta());
    const links: [string | null, string | null][] = [];
    for await (const page of store.chainRows()) for (const row of page) links.push([row[8], row[9]]);
    assert.is(links.length, 6);
    links.slice(1).forEach(([prev], i) => assert.is(prev, links[i]![1], `event ${i + 2} chained to event ${i + 1}`));
  },
);

log('handleAll is all or nothing', async ({ store, commands }) => {
  await commands.handle({ type: 'TrackPet', petId: 2n, quantity: 0, status: 'available' }, meta());
  const refused = await commands.handleAll(
    [1n, 2n, 3n].map((petId) => ({ type: 'TrackPet' as const, petId, quantity: 0, status: 'available' as const })),
    meta(),
  );
  assert.equal(refused, { kind: 'refused', refusal: { reason: 'already_tracked', petId: 2n } }, 'refused as already tracked');
  assert.equal(
    (await entriesOf(store)).map((e) => e.petId),
    [2n],
  );
  assert.is((await eventsOf(store)).length, 1);
});

log('seq is never reused, even after the newest event was deleted behind the store', async ({ target, db, store, commands }) => {
  await commands.handle({ type: 'TrackPet', petId: 1n, quantity: 0, status: 'available' }, meta());
  await commands.handle({ type: 'TrackPet', petId: 2n, quantity: 0, status: 'available' }, meta());
  // Someone with direct access to the database removes the newest event, past every guard.
  const deleted = await target.tamper.deleteNewestEvent(db);
  assert.is(deleted, 2);
  assert.equal(
    (await eventsOf(store)).map((e) => e.seq),
    [1n],
    'the newest event is gone',
  );
  // The store may refuse the next append (it notices the gap) or take it; either way the
  // deleted seq is never handed out again.
  const appended = await commands.handle({ type: 'TrackPet', petId: 3n, quantity: 0, status: 'available' }, meta()).then(
    () => true,
    (error: unknown) => {
      // A refusal is the store's own: it knows it cannot write (PostgreSQL: its chain
      // head is past the newest event), or names the fault; the group commit wraps it.
      const cause = error instanceof CommitFailed ? error.cause : error;
      if (!(cause instanceof StoreUnavailable) && store.fault(cause) === undefined) throw error;
      return false;
    },
  );
  const seqs = (await eventsOf(store)).map((e) => e.seq);
  if (appended) assert.equal(seqs.length, 2, 'the new event is in the log');
  for (const seq of seqs.slice(1)) assert.ok(seq > BigInt(deleted), `seq ${seq} was handed out after ${deleted} was deleted`);
});

log('stock_adjustments: one row per QuantitySet with previous quantity, delta, actor and request id', async ({ store, commands }) => {
  await commands.handle({ type: 'TrackPet', petId: 9007199254740993n, quantity: 10, status: 'available' }, meta('cli:ops', 't1'));
  await commands.handle({ type: 'TrackPet', petId: 2n, quantity: 1, status: 'available' }, meta('cli:ops', 't2'));
  await commands.handle({ type: 'SetQuantity', petId: 9007199254740993n, quantity: 7 }, meta('alice', 'a1'));
  await commands.handle({ type: 'SetStatus', petId: 9007199254740993n, status: 'sold' }, meta('cli:ops', 's1'));
  await commands.handle({ type: 'SetQuantity', petId: 9007199254740993n, quantity: 7 }, meta('bob', 'b1'));
  await commands.handle({ type: 'SetQuantity', petId: 2n, quantity: 4 }, meta('bob', 'b2'));
  const rows: AdjustmentRow[] = [];
  for await (const page of store.stockAdjustments({})) rows.push(...page);
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

const guards = suite<{ db: Db; commands: CommandHandler }>("the event log's SQL guards (SQLite only: triggers, a hand-edited table)");
guards.before.each((ctx) => {
  ctx.db = openDatabase(':memory:');
  let t = Date.parse('2026-03-04T05:06:07.089Z');
  const now = () => (t += 1000);
  ctx.commands = commandsOn(sqliteStoreOn(ctx.db, { now }), now);
});
guards.after.each((ctx) => {
  ctx.db.close();
});

guards('UPDATE and DELETE on events are refused by triggers, whoever connects', async ({ db, commands }) => {
  await commands.handle({ type: 'TrackPet', petId: 1n, quantity: 1, status: 'available' }, meta());
  assert.throws(() => db.exec("UPDATE events SET actor = 'someone else'"), /append-only/);
  assert.throws(() => db.exec('DELETE FROM events'), /append-only/);
  assert.is(db.prepare('SELECT count(*) FROM events').pluck().get(), 1);
});

guards('a projection row edited by hand cannot put a gap into the log', async ({ db, commands }) => {
  await commands.handle({ type: 'TrackPet', petId: 5n, quantity: 2, status: 'pending' }, meta());
  await commands.handle({ type: 'SetQuantity', petId: 5n, quantity: 3 }, meta());
  db.exec("UPDATE inventory SET version = 10, quantity = 999, status = 'sold' WHERE pet_id = 5");
  const entry = await commands
    .handle({ type: 'SetQuantity', petId: 5n, quantity: 4, precondition: (v) => (v === 2 ? undefined : 'if-match-failed') }, meta())
    .then(appliedEntry);
  assert.equal({ quantity: entry.quantity, status: entry.status, version: entry.version }, { quantity: 4, status: 'pending', version: 3 });
  assert.equal(db.prepare('SELECT version FROM events WHERE pet_id = 5 ORDER BY seq').pluck().all(), [1, 2, 3]);
  assert.equal(db.prepare('SELECT quantity, status, version FROM inventory WHERE pet_id = 5').get(), {
    quantity: 4,
    status: 'pending',
    version: 3,
  });
});

guards.run();

const migrations = suite('migrations (SQLite only: its migration files)');

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
  const dir = tempDir('inv-migrate-');
  try {
    const older = dir.path('older');
    mkdirSync(older);
    const files = readdirSync(new URL('../../migrations/sqlite/', import.meta.url))
      .filter((f) => f.endsWith('.sql'))
      .sort();
    for (const f of files.slice(0, 2)) copyFileSync(new URL(`../../migrations/sqlite/${f}`, import.meta.url), join(older, f));
    const path = dir.path('inv.db');
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
    dir.cleanup();
  }
});

migrations('a failing migration leaves the database as it was', () => {
  const dir = tempDir('inv-migrate-');
  try {
    writeFileSync(dir.path('001-good.sql'), 'CREATE TABLE a (x);');
    writeFileSync(dir.path('002-bad.sql'), 'CREATE TABLE b (x); THIS IS NOT SQL;');
    const db = new Database(':memory:');
    assert.throws(() => migrate(db, loadMigrations(`${dir.dir}/`)));
    assert.is(db.prepare("SELECT count(*) FROM sqlite_master WHERE name IN ('a', 'b')").pluck().get(), 0);
    db.close();
  } finally {
    dir.cleanup();
  }
});

migrations('the file is in WAL mode with synchronous FULL', () => {
  const dir = tempDir('inv-wal-');
  try {
    const db = openDatabase(join(dir.dir, 'sub', 'inv.db'));
    assert.is(db.pragma('journal_mode', { simple: true }), 'wal');
    assert.is(db.pragma('synchronous', { simple: true }), 2);
    db.close();
  } finally {
    dir.cleanup();
  }
});

migrations.run();
