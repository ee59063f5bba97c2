// Schema versions on PostgreSQL, by the same rules as on SQLite: only the service's start
// and scripts/migrate make or upgrade a schema (instances and migrators running together
// apply each migration once); every other command refuses an empty database and names
// scripts/migrate; every entry point refuses a schema newer than the code; the reading
// commands run in read-only transactions.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { openStore } from '../kit/stores.ts';
import { freshPostgresDatabase, type TestDatabase } from '../kit/postgres-server.ts';
import { runScript } from '../kit/scripts.ts';
import { noDatabase, query } from '../kit/sql.ts';
import { postgresMigrations } from '../../src/store/postgres/schema.ts';
import { killAll, spawnService, WAIT_MS, withTimeout } from '../kit/service.ts';

/** Every migration's version, as schema_migrations records them once all ran (numbers may leave gaps). */
const versions = () => postgresMigrations().map((m) => ({ version: BigInt(m.version) }));

const schema = suite<{ database: TestDatabase; on: { target: { name: 'postgres' }; db: string } }>('schema versions on PostgreSQL');
schema.before.each(async (ctx) => {
  ctx.database = await freshPostgresDatabase();
  ctx.on = { target: { name: 'postgres' }, db: ctx.database.url };
});
schema.after.each(async (ctx) => {
  await killAll();
  await ctx.database.cleanup();
});

schema('commands other than migrate refuse an empty database, name scripts/migrate and create nothing', async ({ database, on }) => {
  for (const args of [
    ['keys', 'list'],
    ['keys', 'create', 'a'],
    ['track', '1'],
    ['verify-log'],
    ['audit'],
    ['rebuild-projection', '--check'],
  ]) {
    const [name, ...rest] = args as [string, ...string[]];
    const r = await runScript(name, [...rest, '--db', database.url]);
    assert.is(r.status, 1, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, /^error: postgres:\/\/postgres:\*\*\*@.* is an empty database with no schema yet: run scripts\/migrate --db /);
    assert.ok(await noDatabase(on), `${args.join(' ')} created tables`);
  }
});

schema('three migrators at once apply the schema once', async ({ database, on }) => {
  const runs = await Promise.all([0, 1, 2].map(() => runScript('migrate', ['--db', database.url])));
  assert.ok(
    runs.every((r) => r.status === 0),
    runs.map((r) => r.stderr).join('\n'),
  );
  assert.is(runs.filter((r) => r.stdout.includes('applied 001-schema.sql')).length, 1, 'one of them applied it');
  assert.equal(await query(on, 'SELECT version FROM schema_migrations ORDER BY version'), versions());
});

schema('a schema newer than the code is refused by the service, migrate and the commands, and left as it is', async ({ database, on }) => {
  assert.is((await runScript('migrate', ['--db', database.url])).status, 0);
  await query(on, "INSERT INTO schema_migrations VALUES (999, '999-future.sql', '2027-01-01T00:00:00.000Z')");
  const service = spawnService({ INVENTORY_DB: database.url });
  const { code } = await withTimeout(service.exited, WAIT_MS, 'the service to refuse the schema');
  assert.is(code, 1);
  assert.match(service.err(), /has schema version 999, newer than this version of petstore-inventory knows/);
  for (const args of [['migrate'], ['keys', 'list']]) {
    const [name, ...rest] = args as [string, ...string[]];
    const r = await runScript(name, [...rest, '--db', database.url]);
    assert.is(r.status, 1, args.join(' '));
    assert.match(r.stderr, /newer than this version/);
  }
  // An auditor's read goes ahead and says why: anyone with the database can add the row.
  const verified = await runScript('verify-log', ['--db', database.url]);
  assert.is(verified.status, 0, verified.stderr);
  assert.match(verified.stderr, /^warning: .* lists schema version 999 in schema_migrations/);
  assert.equal(await query(on, 'SELECT version FROM schema_migrations ORDER BY version'), [...versions(), { version: 999n }]);
});

schema('the reading commands run read-only: a write through their connection is refused by the server', async ({ database }) => {
  assert.is((await runScript('migrate', ['--db', database.url])).status, 0);
  const reader = await openStore(database.url, { readonly: true, mustExist: true });
  try {
    const refused = await reader.keys.create('sneaky', 'test').then(
      () => 'written',
      (error: { code?: string }) => error.code,
    );
    assert.is(refused, '25006', 'read_only_sql_transaction');
  } finally {
    await reader.close();
  }
});

schema.run();
