// The operator commands and database files (SQLite only: paths), as child processes (test/kit/cli.ts).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as assert from 'uvu/assert';
import { sqliteTarget } from '../kit/sqlite-target.ts';
import { noDatabase } from '../kit/sql.ts';
import { script, expectFailure, RAW_NODE, cliSuite } from '../kit/cli.ts';
import { runScriptSync } from '../kit/scripts.ts';

const files = cliSuite('commands and database files (SQLite only: paths)', [sqliteTarget()]);

files('a path with no database is an error (exit 1) and creates nothing', async (ctx) => {
  for (const args of [['rebuild-projection', '--check'], ['rebuild-projection'], ['keys', 'list'], ['set-status', '1', 'sold']]) {
    const [name, ...rest] = args as [string, ...string[]];
    const r = script(name, [...rest, '--db', ctx.db]);
    expectFailure(r, /^error: no database at /, args.join(' '));
    assert.ok(await noDatabase(ctx), `${args.join(' ')} created a database`);
  }
});

files('a database path under a plain file is one error line in plain words', (ctx) => {
  writeFileSync(join(ctx.dir, 'plain'), '');
  const r = script('migrate', ['--db', join(ctx.dir, 'plain', 'x.db')]);
  expectFailure(
    r,
    /^error: cannot open .*x\.db: .*plain is a file, not a directory: check --db or INVENTORY_DB\n$/,
    'migrate under a file',
  );
  assert.not.match(r.stderr, RAW_NODE);
  assert.is(r.stdout, '', 'nothing is reported as created');
});

files('a directory that cannot be made (under /proc) is one error line, at once, not a loop', () => {
  // Node's recursive mkdir retries for ever where the kernel answers ENOENT for a parent
  // that exists; killed after 15 s, the command would have no exit status.
  const started = Date.now();
  const r = runScriptSync('migrate', ['--db', '/proc/nope/x.db'], { timeoutMs: 15_000 });
  expectFailure(r, /^error: .*\/proc\/nope/, 'migrate under /proc');
  assert.not.match(r.stderr, RAW_NODE);
  assert.ok(Date.now() - started < 15_000, `took ${Date.now() - started} ms`);
  assert.is(r.stdout, '', 'nothing is reported as created');
});

files.run();
