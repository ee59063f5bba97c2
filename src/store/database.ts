// Opens the SQLite file with the settings every connection of ours needs, and brings
// its schema up to date. The service and every operator command open it here.
import { existsSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { loadMigrations, migrate } from './migrate.ts';

export type Db = Database.Database;

export interface OpenOptions {
  /** Open without writing anything: no migration, no journal-mode change. */
  readonly?: boolean;
  /** Refuse a path where no database is yet, instead of creating one there. */
  mustExist?: boolean;
}

export function openDatabase(path: string, options: OpenOptions = {}): Db {
  const missing = path !== ':memory:' && !existsSync(path);
  if ((options.readonly || options.mustExist) && missing) {
    throw new Error(`no database at ${path}: check --db or INVENTORY_DB`);
  }
  if (options.readonly) {
    const db = new Database(path, { readonly: true, fileMustExist: true });
    db.pragma('busy_timeout = 5000');
    requireCurrentSchema(db, path);
    return db;
  }
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path);
  // Wait for another writer (a second process, an operator command) instead of failing.
  db.pragma('busy_timeout = 5000');
  db.pragma('journal_mode = WAL');
  // A 200 means the event is on disk: every commit is synced.
  db.pragma('synchronous = FULL');
  db.pragma('foreign_keys = ON');
  migrate(db);
  return db;
}

/**
 * A token that changes whenever the database may have changed: a commit by another
 * connection (PRAGMA data_version) or a change made through this one (total_changes()).
 * Caches check it to know when to refresh.
 */
export function makeChangeToken(db: Db): () => string {
  const dataVersion = db.prepare('PRAGMA data_version').pluck();
  const ownChanges = db.prepare('SELECT total_changes()').pluck();
  return () => `${dataVersion.get() as number}:${ownChanges.get() as number}`;
}

/** A read-only connection cannot upgrade the schema: it refuses an older one, saying how. */
function requireCurrentSchema(db: Db, path: string): void {
  const latest = loadMigrations().at(-1)?.version ?? 0;
  let applied: number;
  try {
    applied = (db.prepare('SELECT coalesce(max(version), 0) FROM schema_migrations').pluck().get() as number) ?? 0;
  } catch {
    applied = 0;
  }
  if (applied < latest) {
    db.close();
    throw new Error(
      `${path} has schema version ${applied}, this version reads ${latest}: start the service, or run ` +
        'scripts/rebuild-projection --check --db PATH, once to upgrade it in place',
    );
  }
}
