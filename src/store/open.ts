// The one place that picks the storage adapter: a postgres:// or postgresql:// URL opens
// PostgreSQL, anything else is a SQLite file path.
import type { InventoryStore } from './port.ts';
import { isPostgresUrl, pasteableUrl, redactUrl } from './postgres/connection.ts';
import { openPostgresStore } from './postgres/store.ts';
import { openSqliteStore, type SqliteOpenOptions } from './sqlite/store.ts';

export type StoreOpenOptions = SqliteOpenOptions & {
  now?: () => number;
  /** The service opens it (not an operator command): on PostgreSQL its sessions are bounded to fit a request. */
  service?: boolean;
  /**
   * On PostgreSQL, follow other processes' commits on a LISTEN connection (true unless told
   * not): the service and scripts/follow do; the other operator commands do not.
   */
  listen?: boolean;
};

export function openStore(target: string, options: StoreOpenOptions = {}): Promise<InventoryStore> {
  if (isPostgresUrl(target)) {
    return openPostgresStore(target, {
      readonly: options.readonly,
      mustExist: options.mustExist,
      onMigrated: options.onMigrated,
      now: options.now,
      service: options.service,
      listen: options.listen,
    });
  }
  return openSqliteStore(target, options);
}

/** The database as messages name it: a URL without its password, or the path. */
export function describeTarget(target: string): string {
  return isPostgresUrl(target) ? redactUrl(target) : target;
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
