// On PostgreSQL, a process that follows other processes' commits holds a LISTEN
// connection of its own (application_name "petstore-inventory listener"): the service and
// scripts/follow do. An operator command that does not follow commits opens none: it has
// no use for one and would hold a connection of the server's for nothing. SQLite has no
// such connection.
import { spawn } from 'node:child_process';
import pg from 'pg';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { openExistingStore as openCommandStore } from '../../src/cli/common.ts';
import { openStore } from '../kit/stores.ts';
import { freshPostgresDatabase, type TestDatabase } from '../kit/postgres-server.ts';
import { root, scriptPath } from '../kit/paths.ts';

const listen = suite<{ database: TestDatabase }>('LISTEN connections on PostgreSQL');
listen.before.each(async (ctx) => {
  ctx.database = await freshPostgresDatabase();
  // The schema, made as scripts/migrate makes it.
  await (await openStore(ctx.database.url, { listen: false })).close();
});
listen.after.each(async (ctx) => {
  await ctx.database.cleanup();
});

/** The database's sessions that listen for commits. */
async function listeners(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity
       WHERE datname = current_database() AND application_name = 'petstore-inventory listener'`,
    );
    return rows[0]!.n;
  } finally {
    await client.end();
  }
}

/** Waits (at most 10 s) until the database has count listening sessions. */
async function untilListeners(url: string, count: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  while ((await listeners(url)) !== count) {
    if (Date.now() > deadline) throw new Error(`not ${count} listening sessions after 10 s: ${await listeners(url)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

listen('an operator command opens no LISTEN connection; one that asks (scripts/follow) does', async ({ database }) => {
  // The command's store first: it has had longer than the one that listens to connect.
  const command = await openCommandStore({ db: database.url });
  const follower = await openCommandStore({ db: database.url }, { readonly: true, listen: true });
  try {
    await command.changeToken();
    await untilListeners(database.url, 1);
    assert.is(await listeners(database.url), 1, "the command's store listens too");
  } finally {
    await follower.close();
  }
  try {
    await untilListeners(database.url, 0);
  } finally {
    await command.close();
  }
});

listen('the service listens by default', async ({ database }) => {
  const store = await openStore(database.url, { service: true });
  try {
    await untilListeners(database.url, 1);
  } finally {
    await store.close();
  }
  await untilListeners(database.url, 0);
});

listen('scripts/follow listens while it runs', async ({ database }) => {
  const child = spawn(scriptPath('follow'), ['--db', database.url], { cwd: root, stdio: 'ignore' });
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  try {
    await untilListeners(database.url, 1);
  } finally {
    child.kill('SIGTERM');
  }
  assert.is(await exited, 0);
  await untilListeners(database.url, 0);
});

listen.run();
