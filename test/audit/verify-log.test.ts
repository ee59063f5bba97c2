// The tamper-evident log: an attacker with the file drops the triggers and edits,
// removes, reorders or truncates events, possibly recomputing the whole chain; each is
// caught, by the chain itself or by a digest saved before.
import { copyFileSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { openDatabase, type Db } from '../../src/store/sqlite/database.ts';
import { eventHash, formatDigest, GENESIS_HASH, type Digest } from '../../src/store/hash-chain.ts';
import { loadMigrations, migrate } from '../../src/store/sqlite/migrate.ts';
import { verifyLog } from '../../src/application/verify/verify-log.ts';
import type { InventoryStore } from '../../src/store/port.ts';
import { openStore } from '../kit/stores.ts';
import { freshPostgresDatabase, type TestDatabase } from '../kit/postgres-server.ts';
import { sqliteStoreOn } from '../../src/store/sqlite/store.ts';
import { commandsOn } from '../kit/fixtures.ts';
import { tempDir } from '../kit/paths.ts';
import { runScriptSync } from '../kit/scripts.ts';
import { recomputeChain } from '../kit/tamper.ts';

interface Ctx {
  db: Db;
  digest: Digest;
}

/** The histories' clock: from 2026-05-01T00:00:00Z, a second a step. */
function fixedClock(): () => number {
  let t = Date.parse('2026-05-01T00:00:00.000Z');
  return () => (t += 1000);
}

function history(db: Db): Promise<void> {
  const now = fixedClock();
  return historyOn(sqliteStoreOn(db, { now }), now);
}

/** What an attacker does first: the triggers are only a guard against accidents. */
function dropTriggers(db: Db): void {
  db.exec('DROP TRIGGER events_no_update; DROP TRIGGER events_no_delete; DROP TRIGGER events_chained;');
}

const chain = suite<Ctx>("the hash chain (SQLite only: the attacker's SQL)");
chain.before.each(async (ctx) => {
  ctx.db = openDatabase(':memory:');
  await history(ctx.db);
  const verdict = await verifyLog(sqliteStoreOn(ctx.db));
  assert.ok(verdict.ok, 'an untouched log verifies');
  ctx.digest = verdict.ok ? verdict.head : { seq: 0, hash: '' };
  dropTriggers(ctx.db);
});
chain.after.each((ctx) => {
  ctx.db.close();
});

chain('an untouched log verifies; its head is the newest event; it extends its own digests', async ({ db, digest }) => {
  assert.is(digest.seq, 8);
  assert.is(digest.hash, db.prepare('SELECT hash FROM events WHERE seq = 8').pluck().get());
  assert.equal(await verifyLog(sqliteStoreOn(db), digest), {
    ok: true,
    events: 8,
    head: digest,
    keyEvents: 1,
    keyHead: { seq: 1, hash: db.prepare('SELECT hash FROM api_key_events WHERE seq = 1').pluck().get(), chain: 'keys' },
  });
  const earlier = { seq: 3, hash: db.prepare('SELECT hash FROM events WHERE seq = 3').pluck().get() as string };
  assert.ok((await verifyLog(sqliteStoreOn(db), earlier)).ok);
  assert.ok((await verifyLog(sqliteStoreOn(db), { seq: 0, hash: GENESIS_HASH })).ok);
});

chain('each field changed is caught at its event', async ({ db }) => {
  const edits: [string, unknown][] = [
    ['data', '{"quantity":999,"schemaVersion":1}'],
    ['actor', 'mallory'],
    ['pet_id', 2],
    ['version', 7],
    ['type', 'StatusSet'],
    ['request_id', 'forged'],
    ['recorded_at', '2026-05-01T00:00:04.001Z'],
  ];
  for (const [column, value] of edits) {
    const before = db.prepare(`SELECT ${column} FROM events WHERE seq = 4`).safeIntegers(true).pluck().get();
    db.prepare(`UPDATE events SET ${column} = ? WHERE seq = 4`).run(value);
    const verdict = await verifyLog(sqliteStoreOn(db));
    assert.equal(verdict.ok ? 'intact' : [verdict.seq, verdict.reason.includes('field')], [4, true], column);
    db.prepare(`UPDATE events SET ${column} = ? WHERE seq = 4`).run(before);
    assert.ok((await verifyLog(sqliteStoreOn(db))).ok, `${column} restored`);
  }
});

chain('a removed event is caught at the one after it', async ({ db }) => {
  db.exec('DELETE FROM events WHERE seq = 5');
  const verdict = await verifyLog(sqliteStoreOn(db));
  assert.ok(!verdict.ok && verdict.seq === 6 && verdict.reason.includes('prev_hash'));
});

chain('reordered events are caught', async ({ db }) => {
  // Swap the contents of seq 3 and 4 (their hashes go with them).
  db.exec(`UPDATE events SET seq = -3 WHERE seq = 3; UPDATE events SET seq = 3 WHERE seq = 4; UPDATE events SET seq = 4 WHERE seq = -3;`);
  const verdict = await verifyLog(sqliteStoreOn(db));
  assert.ok(!verdict.ok && verdict.seq === 3);
});

chain('a cut tail is caught by the sequence counter; with the counter set back too, by the saved digest', async ({ db, digest }) => {
  db.exec('DELETE FROM events WHERE seq > 6');
  recomputeChain(db);
  let verdict = await verifyLog(sqliteStoreOn(db));
  assert.ok(!verdict.ok && verdict.seq === 8 && verdict.reason.includes('cut off'), JSON.stringify(verdict));
  db.exec("UPDATE sqlite_sequence SET seq = 6 WHERE name = 'events'");
  assert.ok((await verifyLog(sqliteStoreOn(db))).ok, 'the shorter chain is internally consistent');
  verdict = await verifyLog(sqliteStoreOn(db), digest);
  assert.ok(!verdict.ok && verdict.seq === 8 && verdict.reason.includes('truncated'));
});

chain('a removed event with the chain recomputed is caught as a gap in seq', async ({ db }) => {
  db.exec('DELETE FROM events WHERE seq = 5');
  recomputeChain(db);
  let verdict = await verifyLog(sqliteStoreOn(db));
  assert.equal(verdict.ok ? 'intact' : [verdict.seq, verdict.reason], [
    6,
    'seq 5 is missing (events are numbered without gaps): events were removed',
  ]);
  db.exec('DELETE FROM events WHERE seq < 3');
  recomputeChain(db);
  verdict = await verifyLog(sqliteStoreOn(db));
  assert.equal(verdict.ok ? 'intact' : [verdict.seq, verdict.reason.startsWith('seqs 1 to 2 are missing')], [3, true]);
});

chain('an edit with the whole chain recomputed is caught by the digest', async ({ db, digest }) => {
  db.exec(`UPDATE events SET data = '{"quantity":1000,"schemaVersion":1}' WHERE seq = 3`);
  recomputeChain(db);
  assert.ok((await verifyLog(sqliteStoreOn(db))).ok, 'the rewritten chain is internally consistent');
  const verdict = await verifyLog(sqliteStoreOn(db), digest);
  assert.ok(!verdict.ok && verdict.seq === 8 && verdict.reason.includes('rewritten'));
  // A digest from before the edit is still extended: the digest proves its prefix only.
  const early = {
    seq: 2,
    hash: eventHash({
      prevHash: db.prepare('SELECT prev_hash FROM events WHERE seq = 2').pluck().get() as string,
      seq: 2n,
      petId: 9007199254740993n,
      version: 1n,
      type: 'PetTracked',
      data: db.prepare('SELECT data FROM events WHERE seq = 2').pluck().get() as string,
      actor: 'cli:ops',
      requestId: db.prepare('SELECT request_id FROM events WHERE seq = 2').pluck().get() as string,
      recordedAt: db.prepare('SELECT recorded_at FROM events WHERE seq = 2').pluck().get() as string,
    }),
  };
  assert.ok((await verifyLog(sqliteStoreOn(db), early)).ok);
});

chain('a removed event at the digest, with the chain recomputed, is caught', async ({ db, digest }) => {
  const middle = { seq: 5, hash: db.prepare('SELECT hash FROM events WHERE seq = 5').pluck().get() as string };
  db.exec('DELETE FROM events WHERE seq = 5');
  recomputeChain(db);
  const verdict = await verifyLog(sqliteStoreOn(db), middle);
  assert.ok(!verdict.ok && verdict.seq === 5 && verdict.reason.includes('missing'));
  assert.not.ok((await verifyLog(sqliteStoreOn(db), digest)).ok);
});

chain.run();

const upgrade = suite('the chain on a database of the previous version (SQLite only: its migrations)');

upgrade('the migration chains existing events in seq order; new events continue the chain', async () => {
  const scratch = tempDir('inv-chain-');
  const dir = scratch.dir;
  try {
    const older = join(dir, 'migrations');
    mkdirSync(older);
    const files = readdirSync(new URL('../../migrations/sqlite/', import.meta.url))
      .filter((f) => f.endsWith('.sql'))
      .sort();
    for (const f of files.filter((f) => Number.parseInt(f, 10) < 5))
      copyFileSync(new URL(`../../migrations/sqlite/${f}`, import.meta.url), join(older, f));
    const path = join(dir, 'inv.db');
    const db = new Database(path);
    migrate(db, loadMigrations(`${older}/`));
    const insert = db.prepare(
      'INSERT INTO events (pet_id, version, type, data, actor, request_id, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
    );
    insert.run(
      9007199254740993n,
      1,
      'PetTracked',
      '{"quantity":2,"status":"available","schemaVersion":1}',
      'cli:x',
      'r1',
      '2026-01-01T00:00:00.000Z',
    );
    insert.run(3, 1, 'PetTracked', '{"quantity":0,"status":"sold","schemaVersion":1}', 'cli:x', 'r2', '2026-01-01T00:00:01.000Z');
    insert.run(9007199254740993n, 2, 'StatusSet', '{"status":"pending","schemaVersion":1}', 'cli:k', 'r3', '2026-01-01T00:00:02.000Z');
    db.close();

    const upgraded = openDatabase(path);
    const verdict = await verifyLog(sqliteStoreOn(upgraded));
    assert.ok(verdict.ok && verdict.events === 3, JSON.stringify(verdict));
    assert.is(upgraded.prepare('SELECT prev_hash FROM events WHERE seq = 1').pluck().get(), GENESIS_HASH);
    await commandsOn(sqliteStoreOn(upgraded)).handle(
      { type: 'TrackPet', petId: 4n, quantity: 1, status: 'available' },
      { actor: 'cli:k', requestId: 'r4' },
    );
    // The projection was empty in the old database; the new event still chains on.
    const after = await verifyLog(sqliteStoreOn(upgraded), verdict.ok ? verdict.head : undefined);
    assert.ok(after.ok && after.events === 4, JSON.stringify(after));
    assert.throws(() => upgraded.exec("UPDATE events SET actor = 'x'"), /append-only/);
    assert.throws(
      () =>
        upgraded
          .prepare(
            "INSERT INTO events (pet_id, version, type, data, actor, request_id, recorded_at) VALUES (5, 1, 'PetTracked', '{}', 'x', 'r', 't')",
          )
          .run(),
      /hash chain/,
    );
    upgraded.close();
  } finally {
    scratch.cleanup();
  }
});

upgrade.run();

const cli = suite("scripts/verify-log (SQLite only: the attacker's SQL)");

cli('prints the head digest alone on stdout (exit 0); a broken chain or a digest not extended exits 1', async () => {
  const scratch = tempDir('inv-verify-');
  const dir = scratch.dir;
  const verify = (...args: string[]) => runScriptSync('verify-log', args, { db: join(dir, 'inv.db') });
  try {
    const db = openDatabase(join(dir, 'inv.db'));
    await history(db);
    db.close();
    const good = verify();
    assert.is(good.status, 0, good.stderr);
    assert.match(good.stdout, /^8:[0-9a-f]{64}\n$/);
    assert.match(good.stderr, /8 events, chain intact/);
    const saved = good.stdout.trim();
    assert.is(verify('--digest', saved).status, 0);

    const rw = new Database(join(dir, 'inv.db'));
    dropTriggers(rw);
    rw.exec(`UPDATE events SET data = '{"quantity":77,"schemaVersion":1}' WHERE seq = 6`);
    rw.close();
    const broken = verify();
    assert.is(broken.status, 1);
    assert.match(broken.stderr, /BROKEN at seq 6/);
    assert.is(broken.stdout, '');

    assert.is(verify('--digest', 'nonsense').status, 2);
    assert.is(verify('--digest', `${formatDigest({ seq: 1, hash: 'f'.repeat(64) })}`).status, 1);
  } finally {
    scratch.cleanup();
  }
});

cli.run();

// The same chain on PostgreSQL: the same history hashes to the same digest, and an
// attacker who turns the triggers off for their session (as a superuser can) is caught
// the same way, by scripts/verify-log on the database URL.
const onPostgres = suite<{ database: TestDatabase; sqlite: Db }>('the hash chain on PostgreSQL');
onPostgres.before.each(async (ctx) => {
  ctx.database = await freshPostgresDatabase();
  ctx.sqlite = openDatabase(':memory:');
});
onPostgres.after.each(async (ctx) => {
  ctx.sqlite.close();
  await ctx.database.cleanup();
});

/** Two pets (one id above 2^53), six changes, a fixed clock: the same rows on any store. */
async function historyOn(store: InventoryStore, now: () => number): Promise<void> {
  const commands = commandsOn(store, now);
  let request = 0;
  const meta = (actor: string) => ({ actor, requestId: `r-${++request}` });
  // A key's PATCH sets quantities; operators track pets.
  await store.keys.create('alice', 'cli:ops');
  await commands.handle({ type: 'TrackPet', petId: 1n, quantity: 5, status: 'available' }, meta('cli:ops'));
  await commands.handle({ type: 'TrackPet', petId: 9007199254740993n, quantity: 1, status: 'pending' }, meta('cli:ops'));
  for (let i = 0; i < 6; i++)
    await commands.handle({ type: 'SetQuantity', petId: i % 2 ? 1n : 9007199254740993n, quantity: i }, meta('alice'));
}

async function asAttacker(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`SET session_replication_role = replica; ${sql}`);
  } finally {
    await client.end();
  }
}

onPostgres('the same history gives the same digest on both stores, and verify-log says so on both', async ({ database, sqlite }) => {
  const now = fixedClock();
  const store = await openStore(database.url, { now });
  try {
    await historyOn(store, now);
  } finally {
    await store.close();
  }
  await history(sqlite);
  const fromSqlite = await verifyLog(sqliteStoreOn(sqlite));
  const r = runScriptSync('verify-log', [], { db: database.url });
  assert.is(r.status, 0, r.stderr);
  assert.ok(fromSqlite.ok);
  assert.is(r.stdout, `${formatDigest(fromSqlite.head)}\n`, 'byte for byte the same chain');
  assert.match(r.stderr, /^ok: 8 events, chain intact\nok: 1 key events, key chain intact/);
});

onPostgres('a field changed, an event removed, or the chain recomputed after an edit: each caught', async ({ database }) => {
  const now = fixedClock();
  const store = await openStore(database.url, { now });
  try {
    await historyOn(store, now);
  } finally {
    await store.close();
  }
  const digest = runScriptSync('verify-log', [], { db: database.url }).stdout.trim();
  await asAttacker(database.url, "UPDATE events SET actor = 'mallory' WHERE seq = 4");
  let r = runScriptSync('verify-log', [], { db: database.url });
  assert.is(r.status, 1);
  assert.match(r.stderr, /^error: BROKEN at seq 4: .*field/);
  await asAttacker(database.url, "UPDATE events SET actor = 'alice' WHERE seq = 4; DELETE FROM events WHERE seq = 5");
  r = runScriptSync('verify-log', [], { db: database.url });
  assert.match(r.stderr, /^error: BROKEN at seq 6: .*prev_hash/);
  // Rewritten history with every hash recomputed: only a digest saved before catches it.
  const store2 = await openStore(database.url, { readonly: true, mustExist: true });
  const rows: string[] = [];
  let prev = GENESIS_HASH;
  try {
    for await (const page of store2.chainRows()) {
      for (const [seq, petId, version, type, data, actor, requestId, recordedAt] of page) {
        const hash = eventHash({ prevHash: prev, seq, petId, version, type, data, actor, requestId, recordedAt });
        rows.push(`UPDATE events SET prev_hash = '${prev}', hash = '${hash}' WHERE seq = ${seq};`);
        prev = hash;
      }
    }
  } finally {
    await store2.close();
  }
  await asAttacker(database.url, rows.join('\n'));
  r = runScriptSync('verify-log', [], { db: database.url });
  assert.is(r.status, 1, 'the recomputed chain still has its gap');
  assert.match(r.stderr, /^error: BROKEN at seq 6: seq 5 is missing/);
  r = runScriptSync('verify-log', ['--digest', digest], { db: database.url });
  assert.is(r.status, 1);
  assert.match(r.stderr, /^error: BROKEN at seq 6: /);
  // The newest events cut off, the chain head's hash set to the new newest: the head's
  // seq still counts them.
  await asAttacker(database.url, 'DELETE FROM events WHERE seq >= 5; UPDATE chain_head SET hash = (SELECT hash FROM events WHERE seq = 4)');
  r = runScriptSync('verify-log', [], { db: database.url });
  assert.match(r.stderr, /^error: BROKEN at seq 8: the sequence counter is at 8 but the log ends at seq 4/);
  await asAttacker(database.url, 'UPDATE chain_head SET seq = 4');
  r = runScriptSync('verify-log', ['--digest', digest], { db: database.url });
  assert.match(r.stderr, /^error: BROKEN at seq 8: .*truncated/);
});

onPostgres.run();
