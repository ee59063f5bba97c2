// Opens the SQLite file with the settings every connection of ours needs, in one of three
// ways: the service's start and scripts/migrate create the file (owner-only) and bring
// its schema up to date; operator commands that write use an existing, current database
// as it is; commands that read open it read-only and never take the write lock. Every
// way refuses a schema newer than the code.
import { closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { SchemaError } from '../migrations.ts';
import type { OpenOptions } from '../port.ts';
import { loadMigrations, migrate, requireCurrentSchema, requireUpgradable } from './migrate.ts';
import { explainOpenError } from './open-errors.ts';
import { openedElsewhereProblem } from './side-files.ts';

export type Db = Database.Database;

/** Another process has the database open in a way that forbids opening it now. */
class DatabaseInUse extends Error {
  override name = 'DatabaseInUse';
}

/**
 * The write-ahead log's size after a checkpoint emptied it (journal_size_limit): a log
 * that grew behind a long read transaction is cut back to this, not kept at its peak.
 * The writer thread also checkpoints, once idle, a log above it (wal-keeper.ts).
 */
export const WAL_LIMIT_BYTES = 4 * 1024 * 1024;

export type { OpenOptions } from '../port.ts';

export function openDatabase(path: string, options: OpenOptions = {}): Db {
  const memory = path === ':memory:';
  const upgrade = !options.readonly && !options.mustExist;
  if (!upgrade && !memory && !existsSync(path)) {
    throw new SchemaError(`no database at ${path}: check --db or INVENTORY_DB, or create one with scripts/migrate --db ${path}`);
  }
  // A process that has this file open on side files no longer at their paths would
  // have a second writer beside it: refused before SQLite makes new ones.
  const elsewhere = memory ? undefined : openedElsewhereProblem(path);
  if (elsewhere) throw new DatabaseInUse(elsewhere);
  let db: Db | undefined;
  try {
    if (upgrade && !memory) createOwnerOnly(path);
    db = new Database(path, { readonly: options.readonly === true, fileMustExist: !memory });
    // Wait for another writer (a second process, an operator command) instead of failing.
    db.pragma('busy_timeout = 5000');
    // Judged before anything is written: a refused file is left exactly as it was.
    if (upgrade) requireUpgradable(db, path);
    else requireCurrentSchema(db, path, undefined, options.readonly === true && options.auditing === true);
    if (options.readonly) return db;
    db.pragma('journal_mode = WAL');
    // A 200 means the event is on disk: every commit is synced.
    db.pragma('synchronous = FULL');
    db.pragma(`journal_size_limit = ${WAL_LIMIT_BYTES}`);
    db.pragma('foreign_keys = ON');
    db.pragma('temp_store = MEMORY');
    if (upgrade) {
      const applied = migrate(db, loadMigrations(), path);
      options.onMigrated?.(applied);
    }
    return db;
  } catch (err) {
    db?.close();
    throw explainOpenError(err, path, options.readonly ? 'read' : 'write');
  }
}

/**
 * The database holds key hashes and the audit trail: a file we create is the owner's
 * alone (0600; SQLite gives its -wal and -shm the same mode), and so is a directory we
 * create (0700). Existing ones are left as they are. An empty file is a valid empty
 * database; 'wx' makes one of two processes starting together the creator.
 */
function createOwnerOnly(path: string): void {
  makeDirectories(dirname(path));
  try {
    closeSync(openSync(path, 'wx', 0o600));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
}

/**
 * Makes dir and its missing parents (0700), one at a time from the nearest that exists:
 * Node's recursive mkdir retries for ever where the kernel answers ENOENT under a parent
 * that exists (/proc), and here any refusal is an error at once.
 */
function makeDirectories(dir: string): void {
  const missing: string[] = [];
  for (let at = resolve(dir); !existsSync(at) && dirname(at) !== at; at = dirname(at)) missing.push(at);
  for (const at of missing.reverse()) {
    try {
      mkdirSync(at, { mode: 0o700 });
    } catch (err) {
      // Another process starting on the same new path made it first.
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  }
}

/** What the database may have changed since: makeChangeToken. */
export interface ChangeToken {
  /** Asks SQLite now: one statement (PRAGMA data_version) and the own-commit count. */
  check: () => string;
  /** The same, but a check made earlier in this event-loop turn is reused while this
   * process committed nothing since: for the list cache, which runs after a request's
   * authentication has checked, and for pollers. */
  current: () => string;
}

/**
 * A token that changes whenever the database may have changed: a commit by another
 * connection (PRAGMA data_version: the writer thread's or another process's) or one
 * made by this process. ownCommits counts the latter when the writes go through
 * another connection of this process (the writer thread says so after each commit);
 * without it the writes go through this very connection and total_changes() counts
 * them (operator commands and tests: nothing is reused between calls then).
 */
export function makeChangeToken(db: Db, ownCommits?: () => number): ChangeToken {
  const dataVersion = db.prepare('PRAGMA data_version').pluck();
  if (!ownCommits) {
    const ownChanges = db.prepare('SELECT total_changes()').pluck();
    const check = () => `${dataVersion.get() as number}:${ownChanges.get() as number}`;
    return { check, current: check };
  }
  const own = ownCommits;
  // The check of this event-loop turn (undefined once the turn ended) and the own-commit
  // count it saw.
  let turnToken: string | undefined;
  let turnOwn = 0;
  const endTurn = () => (turnToken = undefined);
  const check = () => {
    turnOwn = own();
    if (turnToken === undefined) setImmediate(endTurn);
    turnToken = `${dataVersion.get() as number}:${turnOwn}`;
    return turnToken;
  };
  return { check, current: () => (turnToken !== undefined && turnOwn === own() ? turnToken : check()) };
}
