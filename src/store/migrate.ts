// Applies the numbered plain-SQL files of migrations/ in order, all pending ones in one
// transaction (an upgrade happens whole or not at all), and records in
// schema_migrations which ran, so that a database made by an older version upgrades in
// place and nothing runs twice.
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type Database from 'better-sqlite3';
import { eventHash } from './hash-chain.ts';

const MIGRATIONS_DIR = fileURLToPath(new URL('../../migrations/', import.meta.url));

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export function loadMigrations(dir = MIGRATIONS_DIR): Migration[] {
  return readdirSync(dir)
    .filter((file) => /^\d+-[\w-]+\.sql$/.test(file))
    .map((file) => ({
      version: Number.parseInt(file, 10),
      name: file,
      sql: readFileSync(dir + file, 'utf8'),
    }))
    .sort((a, b) => a.version - b.version);
}

/** Returns the names of the migrations it applied. */
export function migrate(db: Database.Database, migrations = loadMigrations()): string[] {
  // SQL functions the migrations may call.
  registerEventHash(db);
  db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    applied_at TEXT NOT NULL
  )`);
  const applied = db.prepare('SELECT version FROM schema_migrations').pluck();
  const record = db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)');
  // IMMEDIATE: two processes starting on one new file must not both apply a migration.
  const run = db.transaction(() => {
    const done = new Set(applied.all() as number[]);
    const ran: string[] = [];
    for (const m of migrations) {
      if (done.has(m.version)) continue;
      db.exec(m.sql);
      record.run(m.version, m.name, new Date().toISOString());
      ran.push(m.name);
    }
    return ran;
  });
  return run.immediate();
}

/** Makes event_hash(prev_hash, seq, pet_id, …) callable from SQL (the migrations use it). */
export function registerEventHash(db: Database.Database): void {
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
