// A PostgreSQL URL without a password takes it from ~/.pgpass, as libpq does and as the
// guides suggest, without node-pg's DeprecationWarning on every command.
import { chmodSync, writeFileSync } from 'node:fs';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { freshPostgresDatabase } from '../kit/postgres-server.ts';
import { tempDir } from '../kit/paths.ts';
import { runScript } from '../kit/scripts.ts';

const test = suite('~/.pgpass [postgres]');

test('a URL without its password connects with the one in ~/.pgpass, and no warning is printed', async () => {
  const db = await freshPostgresDatabase();
  const home = tempDir('pgpass-home-');
  try {
    const url = new URL(db.url);
    const password = decodeURIComponent(url.password);
    url.password = '';
    writeFileSync(home.path('.pgpass'), `${url.hostname}:${url.port}:*:${decodeURIComponent(url.username)}:${password}\n`);
    chmodSync(home.path('.pgpass'), 0o600);
    const migrated = await runScript('migrate', ['--db', url.toString()], { env: { HOME: home.dir } });
    assert.is(migrated.status, 0, migrated.stderr);
    const listed = await runScript('keys', ['--db', url.toString(), 'list'], { env: { HOME: home.dir } });
    assert.is(listed.status, 0, listed.stderr);
    for (const r of [migrated, listed]) assert.not.match(r.stderr, /DeprecationWarning|pgpass support is deprecated/);
    // Without the file's line the password is missing, and the server says so.
    writeFileSync(home.path('.pgpass'), '');
    const refused = await runScript('keys', ['--db', url.toString(), 'list'], { env: { HOME: home.dir } });
    assert.is(refused.status, 1, refused.stderr);
  } finally {
    home.cleanup();
    await db.cleanup();
  }
});

test.run();
