// A new, empty PostgreSQL database for one test, on the server the test run started
// (scripts/test-run.ts) or the developer's own (TEST_POSTGRES_URL). Each test gets a
// database of its own, so tests cannot see each other's events or keys.
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export interface TestDatabase {
  url: string;
  /** Drops the database, closing any connection still open to it. */
  cleanup(): Promise<void>;
}

export function postgresServerUrl(): string {
  const url = process.env.TEST_POSTGRES_URL;
  if (!url) {
    throw new Error(
      'TEST_POSTGRES_URL is not set: run the tests with npm test (it starts a PostgreSQL server) or set it to a server of your own',
    );
  }
  return url;
}

/** Runs work on one connection to url, closed afterwards. */
async function connected<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

const asAdmin = <T>(work: (client: pg.Client) => Promise<T>): Promise<T> => connected(postgresServerUrl(), work);

/** Runs SQL (several statements allowed) on a connection of its own to url. */
export async function runSql(url: string, sql: string): Promise<void> {
  await connected(url, (client) => client.query(sql));
}

export async function freshPostgresDatabase(): Promise<TestDatabase> {
  const name = `inventory_test_${randomBytes(6).toString('hex')}`;
  await asAdmin((client) => client.query(`CREATE DATABASE ${name}`));
  const url = new URL(postgresServerUrl());
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    cleanup: () => asAdmin((client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => undefined),
  };
}
