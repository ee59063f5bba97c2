// SQLite's migrations: applies the numbered plain-SQL files of migrations/sqlite/ in order, all pending ones in one
// transaction (an upgrade happens whole or not at all), and records in
// schema_migrations which ran, so that a database made by an older version upgrades in
// place and nothing runs twice. Also judges a database's schema against the code's:
// only the service's start and scripts/migrate upgrade one; every other command needs it
// current, and nobody touches a schema written by a newer version of this code.
import { fileURLToPath } from 'node:url';
import type Database from 'better-sqlite3';
import { eventHash, keyEventHash } from '../hash-chain.ts';
import { eventLeaf, nodeHash } from '../../support/merkle.ts';
import { readMigrations, refuseNewer, requireCurrent, SchemaError, type Migration } from '../migrations.ts';

const MIGRATIONS_DIR = fileURLToPath(new URL('../../../migrations/sqlite/', import.meta.url));

/** SQLite's migrations (those of another directory, for tests of older schemas). */
export function loadMigrations(dir = MIGRATIONS_DIR): Migration[] {
  return readMigrations(dir);
}

/**
 * The versions recorded in schema_migrations, ascending; [] for a database without any
 * table (a new, empty file). Reads only. A database with tables but no schema_migrations
 * was not made by this service: refused rather than have our tables mixed into it.
 */
function appliedVersions(db: Database.Database, path: string): number[] {
  const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all() as string[];
  if (tables.length === 0) return [];
  if (!tables.includes('schema_migrations')) {
    throw new SchemaError(`${path} is a SQLite database but not one of petstore-inventory (it has no schema_migrations table)`);
  }
  return db.prepare('SELECT version FROM schema_migrations ORDER BY version').pluck().all() as number[];
}

/** For connections that may upgrade: refuses a foreign database or a newer schema. Reads only. */
export function requireUpgradable(db: Database.Database, path: string, migrations = loadMigrations()): void {
  refuseNewer(appliedVersions(db, path), migrations, path);
}

/** For connections that must not upgrade: refuses any schema but the code's own. Reads only. */
export function requireCurrentSchema(db: Database.Database, path: string, migrations = loadMigrations(), readonly = false): void {
  requireCurrent(appliedVersions(db, path), migrations, path, path, '', readonly);
}

/** Returns the names of the migrations it applied. Refuses a schema newer than the code. */
export function migrate(db: Database.Database, migrations = loadMigrations(), path = 'the database'): string[] {
  // SQL functions the migrations may call.
  registerEventHash(db);
  // IMMEDIATE: two processes starting on one new file must not both apply a migration;
  // the table of what ran is made inside it, so a refused or failed upgrade leaves none.
  const run = db.transaction(() => {
    const applied = appliedVersions(db, path);
    refuseNewer(applied, migrations, path);
    db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version    INTEGER PRIMARY KEY,
      name       TEXT NOT NULL,
      applied_at TEXT NOT NULL
    )`);
    const done = new Set(applied);
    const record = db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)');
    const ran: string[] = [];
    for (const m of migrations) {
      if (done.has(m.version)) continue;
      db.exec(m.sql);
      AFTER[m.name]?.(db);
      record.run(m.version, m.name, new Date().toISOString());
      ran.push(m.name);
    }
    return ran;
  });
  return run.immediate();
}

/** What a migration does beyond its SQL, which SQLite cannot loop in: after the tree's
 * leaves, each level of complete subtrees from the one below, until none is complete. */
const AFTER: Record<string, (db: Database.Database) => void> = {
  '012-merkle-tree.sql': (db) => {
    const level = db.prepare(
      `INSERT INTO tree_nodes (level, idx, hash)
       SELECT l.level + 1, l.idx / 2, merkle_node(l.hash, r.hash)
       FROM tree_nodes l JOIN tree_nodes r ON r.level = l.level AND r.idx = l.idx + 1
       WHERE l.level = ? AND l.idx % 2 = 0`,
    );
    for (let n = 0; level.run(n).changes > 0; n += 1);
  },
};

/** Makes event_hash(prev_hash, seq, pet_id, …) and key_event_hash(prev_hash, seq, type, …)
 * callable from SQL (the migrations use them). */
function registerEventHash(db: Database.Database): void {
  db.function('merkle_leaf', { deterministic: true }, (hash) => eventLeaf(String(hash)));
  db.function('merkle_node', { deterministic: true }, (left, right) => nodeHash(left as Buffer, right as Buffer));
  db.function('key_event_hash', { deterministic: true, safeIntegers: true }, (prevHash, seq, type, name, keyHash, recordedAt, actor) =>
    keyEventHash({
      prevHash: String(prevHash),
      seq: seq as bigint,
      type: String(type),
      name: String(name),
      keyHash: String(keyHash),
      recordedAt: String(recordedAt),
      actor: String(actor),
    }),
  );
  db.function(
    'event_hash',
    { deterministic: true, safeIntegers: true },
    (prevHash, seq, petId, version, type, data, actor, requestId, recordedAt) =>
      eventHash({
        prevHash: String(prevHash),
        seq: seq as bigint,
        petId: petId as bigint,
        version: version as bigint,
        type: String(type),
        data: String(data),
        actor: String(actor),
        requestId: String(requestId),
        recordedAt: String(recordedAt),
      }),
  );
}
