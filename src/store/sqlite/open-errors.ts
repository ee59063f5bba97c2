// Says why a database could not be opened, in an operator's terms and from the facts of
// the file system: a file that is not a database, a file this user may not read or
// write, a read-only directory, a lock held too long. SQLite's own words ("unable to
// open database file") name none of these, and a guess sends people to the wrong fix.
import { accessSync, constants, statSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import { SchemaError } from '../migrations.ts';

function can(path: string, mode: number): boolean {
  try {
    accessSync(path, mode);
    return true;
  } catch {
    return false;
  }
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** The nearest existing ancestor of dir (itself included) when it is not a directory. */
function fileInTheWay(dir: string): string | undefined {
  for (let at = dir; ; at = dirname(at)) {
    if (can(at, constants.F_OK)) return isDirectory(at) ? undefined : at;
    if (dirname(at) === at) return undefined;
  }
}

/** Errors without a code (our own, or a bug) pass through unchanged. */
export function explainOpenError(err: unknown, path: string, access: 'read' | 'write'): unknown {
  const code = (err as { code?: unknown } | undefined)?.code;
  if (err instanceof SchemaError || typeof code !== 'string') return err;
  const message = err instanceof Error ? err.message : String(err);
  const explained = (text: string) => new Error(text, { cause: err });

  if (code.startsWith('SQLITE_NOTADB')) return explained(`${path} is not a SQLite database: check --db or INVENTORY_DB`);
  if (code.startsWith('SQLITE_CORRUPT')) return explained(`${path} is damaged (${message}): restore it from a backup`);
  if (/^SQLITE_(BUSY|LOCKED)/.test(code)) return explained(`${path} is locked by another process (waited 5 s): try again`);
  if (isDirectory(path)) return explained(`${path} is a directory, not a database file: check --db or INVENTORY_DB`);

  const dir = dirname(path);
  const inTheWay = fileInTheWay(dir);
  if (inTheWay !== undefined) {
    return explained(`cannot open ${path}: ${inTheWay} is a file, not a directory: check --db or INVENTORY_DB`);
  }
  if (can(dir, constants.F_OK) && !can(dir, constants.X_OK)) {
    return explained(`cannot open ${path}: this user has no permission to enter its directory ${dir}`);
  }
  const exists = can(path, constants.F_OK);
  if (exists && !can(path, constants.R_OK)) return explained(`cannot read ${path}: this user has no permission to read it`);
  if (access === 'write' && exists && !can(path, constants.W_OK)) {
    return explained(`cannot write ${path}: it is read-only for this user`);
  }
  if (can(dir, constants.F_OK) && !can(dir, constants.W_OK | constants.X_OK)) {
    const name = basename(path);
    const beside = `SQLite keeps ${name}-wal and ${name}-shm beside the database (WAL mode) and must be able to create them`;
    return explained(
      access === 'read'
        ? `cannot open ${path}: its directory ${dir} is read-only for this user, and ${beside}; ` +
            'ask for write access to the directory, or read a copy (the database with its -wal file) made in a writable place'
        : `cannot ${exists ? 'open' : 'create'} ${path}: its directory ${dir} is read-only for this user, and ${beside}`,
    );
  }
  if (code === 'EACCES' || code === 'EPERM' || code === 'SQLITE_PERM') {
    return explained(`cannot ${exists ? 'open' : 'create'} ${path}: permission denied`);
  }
  if (code === 'EROFS') return explained(`cannot create ${path}: the file system is read-only`);
  // A directory the kernel will not make where its parent exists (/proc, /sys).
  if ((err as { syscall?: unknown }).syscall === 'mkdir') {
    const at = (err as { path?: unknown }).path;
    return explained(
      `cannot create ${path}: the system refuses to make the directory ${typeof at === 'string' ? at : dir}: check --db or INVENTORY_DB`,
    );
  }
  return explained(`cannot open ${path}: ${message}`);
}
