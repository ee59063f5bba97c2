// The PostgreSQL schema's versions, by the same rules as SQLite's (../migrate.ts):
// migrations/postgres/ applied in order, all pending ones in one transaction, recorded in
// schema_migrations; only the service's start and scripts/migrate upgrade; nobody uses a
// schema newer than the code. Instances starting together on one empty database are
// serialized by an advisory lock, so each migration runs once.
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import { readMigrations, refuseNewer, requireCurrent, SchemaError, type Migration } from '../migrations.ts';

const POSTGRES_MIGRATIONS_DIR = fileURLToPath(new URL('../../../migrations/postgres/', import.meta.url));
import { pasteableUrl } from './connection.ts';
import { checkout, inTransaction } from './transactions.ts';

const MIGRATION_LOCK = 'petstore-inventory/migrate';

export function postgresMigrations(): Migration[] {
  return readMigrations(POSTGRES_MIGRATIONS_DIR);
}

/** The versions recorded in schema_migrations; [] for a database without tables. Reads only. */
async function appliedVersions(client: pg.ClientBase, name: string): Promise<number[]> {
  const tables = await client.query<{ table_name: string }>(
    "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'",
  );
  if (tables.rows.length === 0) return [];
  if (!tables.rows.some((t) => t.table_name === 'schema_migrations')) {
    throw new SchemaError(`${name} is a PostgreSQL database but not one of petstore-inventory (it has no schema_migrations table)`);
  }
  const { rows } = await client.query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version');
  return rows.map((r) => r.version);
}

/** Refuses any schema but the code's own (too old, too new, none). Reads only. */
export async function requireCurrentPostgresSchema(
  pool: pg.Pool,
  name: string,
  url: string,
  migrations = postgresMigrations(),
  readonly = false,
): Promise<void> {
  const { client, release } = await checkout(pool);
  try {
    const { arg, note } = pasteableUrl(url);
    // The schema is made by the role that owns it: a fix that runs migrate as the
    // service's role fails with "permission denied for schema public".
    requireCurrent(await appliedVersions(client, name), migrations, name, arg, `${note}${OWNER_NOTE}`, readonly);
  } finally {
    release();
  }
}

/** Who may make the schema, said where a role that may not is told to. */
const OWNER_NOTE = ", as the role that owns the schema (inventory_owner in docs/scaling.md), not the service's role";

/** PostgreSQL's insufficient_privilege, whose words ("permission denied for schema public") do not say who may. */
function ownerNeeded(error: unknown): never {
  if ((error as { code?: unknown } | null)?.code === '42501') {
    throw new SchemaError(
      `${(error as Error).message}: the schema is made by the role that owns it (the role scripts/migrate runs as, ` +
        "inventory_owner in docs/scaling.md), not the service's role: run scripts/migrate --db with the owner's URL",
      { cause: error },
    );
  }
  throw error;
}

/** Applies what is pending; returns the names applied. Refuses a schema newer than the code. */
export function migratePostgres(pool: pg.Pool, name: string, migrations = postgresMigrations()): Promise<string[]> {
  return migrateAll(pool, name, migrations).catch(ownerNeeded);
}

function migrateAll(pool: pg.Pool, name: string, migrations: Migration[]): Promise<string[]> {
  // No lock or statement timeout here, whoever opened the pool: an instance starting
  // while another migrates waits for it, and a migration takes as long as it takes.
  return inTransaction(pool, 'BEGIN; SET LOCAL lock_timeout = 0; SET LOCAL statement_timeout = 0', async (client) => {
    await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [MIGRATION_LOCK]);
    const applied = await appliedVersions(client, name);
    refuseNewer(applied, migrations, name);
    const done = new Set(applied);
    // Nothing to do: nothing is created either, so that a service whose role may not
    // create tables (the least-privilege setup) starts on a current schema.
    if (migrations.every((m) => done.has(m.version))) return [];
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version    integer PRIMARY KEY,
      name       text NOT NULL,
      applied_at text NOT NULL
    )`);
    const ran: string[] = [];
    for (const m of migrations) {
      if (done.has(m.version)) continue;
      await client.query(m.sql);
      await client.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [
        m.version,
        m.name,
        new Date().toISOString(),
      ]);
      ran.push(m.name);
    }
    return ran;
  });
}
