// The one place that picks the storage adapter: a postgres:// or postgresql:// URL opens
// PostgreSQL, another URL is refused, anything else is a SQLite file path.
import { foreignSchemeProblem, maskedUrl } from './target.ts';
import type { InventoryStore } from './port.ts';
import { isPostgresUrl, pasteableUrl, redactUrl } from './postgres/connection.ts';
import { openPostgresStore } from './postgres/store.ts';
import { backupSqlite } from './sqlite/backup.ts';
import { loadMigrations } from './sqlite/migrate.ts';
import { postgresMigrations } from './postgres/schema.ts';
import { openSqliteStore, type SqliteOpenOptions } from './sqlite/store.ts';

export type StoreOpenOptions = SqliteOpenOptions & {
  now?: () => number;
  /** The service opens it (not an operator command): on PostgreSQL its sessions are bounded
   * to fit a request; on SQLite its writes go to a writer thread, off the event loop. */
  service?: boolean;
  /**
   * On PostgreSQL, follow other processes' commits on a LISTEN connection (true unless told
   * not): the service and scripts/follow do; the other operator commands do not.
   */
  listen?: boolean;
};

/** The schema version this code writes to the target's kind of database. */
export function schemaVersion(target: string): number {
  return (isPostgresUrl(target) ? postgresMigrations() : loadMigrations()).at(-1)?.version ?? 0;
}

/**
 * A consistent copy of the database into the new file out, while writers go on: SQLite
 * only (a PostgreSQL database is copied with its own tools, pg_dump). Synchronous.
 */
export function backupStore(target: string, out: string): void {
  refuseForeignScheme(target);
  refuseForeignScheme(out);
  if (isPostgresUrl(target)) {
    throw new Error('a PostgreSQL database is copied with its own tools (pg_dump), not by this service');
  }
  backupSqlite(target, out);
}

/** A URL of another scheme (a typo such as postgress://) is never taken as a file name. */
function refuseForeignScheme(target: string): void {
  const problem = foreignSchemeProblem(target, 'the database');
  if (problem) throw new Error(problem);
}

export async function openStore(target: string, options: StoreOpenOptions = {}): Promise<InventoryStore> {
  refuseForeignScheme(target);
  if (isPostgresUrl(target)) {
    return openPostgresStore(target, {
      readonly: options.readonly,
      mustExist: options.mustExist,
      auditing: options.auditing,
      onMigrated: options.onMigrated,
      now: options.now,
      service: options.service,
      listen: options.listen,
      signingKey: options.signingKey,
    });
  }
  return openSqliteStore(target, { ...options, writer: options.writer ?? (options.service ? 'thread' : 'inline') });
}

/** The database as messages name it: a URL without its password, or the path. */
export function describeTarget(target: string): string {
  return isPostgresUrl(target) ? redactUrl(target) : maskedUrl(target);
}

/**
 * The database as a --db argument an operator can paste, and a note to print after the
 * command (the password left out of a URL); a path is quoted when the shell would split it.
 */
export function dbArgument(target: string): { arg: string; note: string } {
  if (isPostgresUrl(target)) return pasteableUrl(target);
  return { arg: /^[\w./@%+=:,-]+$/.test(target) ? target : `'${target.replaceAll("'", "'\\''")}'`, note: '' };
}

export { isPostgresUrl };
