// Databases that this machine's pg_dump can read, for the tests of the PostgreSQL backup
// and of the auditors' dump.
import { spawnSync } from 'node:child_process';
import * as assert from 'uvu/assert';
import { createDatabase, startPostgres } from '../../scripts/embedded-postgres.ts';
import { freshPostgresDatabase, postgresServerUrl, type TestDatabase } from './postgres-server.ts';
import { query } from './sql.ts';

/**
 * Two new databases on a server this pg_dump reads (it refuses a server of a newer major
 * version than its own): on the test run's server when it can, else on a version 15
 * server of the test's own (Debian 12's pg_dump is 15, the test run's server 18).
 */
export async function dumpableDatabases(databases: TestDatabase[]): Promise<[source: string, target: string]> {
  const version = spawnSync('pg_dump', ['--version'], { encoding: 'utf8' });
  const client = Number(/\(PostgreSQL\) (\d+)/.exec(version.stdout)?.[1]);
  const [row] = await query<{ server_version_num: string }>(
    { target: { name: 'postgres' }, db: postgresServerUrl() },
    'SHOW server_version_num',
  );
  if (client >= Math.floor(Number(row!.server_version_num) / 10_000)) {
    for (let i = 0; i < 2; i++) databases.push(await freshPostgresDatabase());
    return [databases[0]!.url, databases[1]!.url];
  }
  assert.ok(client >= 15, `this pg_dump is version ${client}, older than any server the tests can start`);
  const server = await startPostgres('backup.test', { major: 15 });
  databases.push({ url: server.url, cleanup: () => server.stop() });
  return [await createDatabase(server.url, 'inventory'), await createDatabase(server.url, 'inventory_restored')];
}
