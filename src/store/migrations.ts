// What both stores' migrations share: numbered plain-SQL files read from a directory
// (migrations/sqlite/, migrations/postgres/), and the rules that judge a database's
// applied versions against the code's: nobody touches a schema written by a newer
// version of this code, and only the service's start and scripts/migrate upgrade one.
import { readdirSync, readFileSync } from 'node:fs';

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/** A database whose schema this code must not use as it is (too old, too new, not ours). */
export class SchemaError extends Error {
  override name = 'SchemaError';
}

/** The numbered plain-SQL files of a directory (its path ends in /), by version. */
export function readMigrations(dir: string): Migration[] {
  return readdirSync(dir)
    .filter((file) => /^\d+-[\w-]+\.sql$/.test(file))
    .map((file) => ({
      version: Number.parseInt(file, 10),
      name: file,
      sql: readFileSync(dir + file, 'utf8'),
    }))
    .sort((a, b) => a.version - b.version);
}

/** Refuses a schema with versions this code does not know (written by a newer version). */
export function refuseNewer(applied: number[], migrations: Migration[], path: string): void {
  const known = new Set(migrations.map((m) => m.version));
  const unknown = applied.filter((v) => !known.has(v));
  if (unknown.length === 0) return;
  throw new SchemaError(
    `${path} has schema version ${Math.max(...applied)}, newer than this version of petstore-inventory ` +
      `knows (${migrations.at(-1)?.version ?? 0}): use the newer version that upgraded it; nothing was changed`,
  );
}

/**
 * Refuses applied versions that are not exactly the code's: newer, older or none. The
 * fix names the database as dbArg (path unless given), a --db value one can paste, and
 * adds dbNote (what to do about a password left out).
 */
export function requireCurrent(
  applied: number[],
  migrations: Migration[],
  path: string,
  dbArg = path,
  dbNote = '',
  readonly = false,
): void {
  const done = new Set(applied);
  const complete = migrations.every((m) => done.has(m.version));
  const known = new Set(migrations.map((m) => m.version));
  const unknown = applied.filter((v) => !known.has(v));
  // A row in schema_migrations is no proof of a newer schema (anyone with the database can
  // add one): a read-only look at a schema that has all of this code's versions goes
  // ahead and says so, so that an auditor's command is not stopped by it.
  if (readonly && complete && unknown.length > 0) {
    process.stderr.write(
      `warning: ${path} lists schema version${unknown.length === 1 ? '' : 's'} ${unknown.join(', ')} in schema_migrations, ` +
        `which this version of petstore-inventory does not know (a newer version upgraded it, or the row was added by hand); ` +
        `it has every version this one needs, and is read as this version's schema\n`,
    );
    return;
  }
  refuseNewer(applied, migrations, path);
  if (complete) return;
  const fix = `run scripts/migrate --db ${dbArg}${dbNote} (starting the service upgrades it too)`;
  if (applied.length === 0) throw new SchemaError(`${path} is an empty database with no schema yet: ${fix}`);
  throw new SchemaError(
    `${path} has schema version ${Math.max(...applied)}, older than this version needs ` + `(${migrations.at(-1)?.version ?? 0}): ${fix}`,
  );
}
