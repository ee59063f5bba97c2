// scripts/keys end to end (create, list, revoke), as a child process on every store (test/kit/cli.ts).
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import * as assert from 'uvu/assert';
import { noDatabase, query } from '../kit/sql.ts';
import { ISO_MS, KEY_LINE, operator, script, expectExit, expectFailure, expectUsageError, cliSuite, createDb } from '../kit/cli.ts';

const keys = cliSuite('scripts/keys');

keys('create prints the key alone, the table holds only its hash, list shows no secret', async (ctx) => {
  await createDb(ctx);
  // INVENTORY_DB names the database here; --db below.
  const created = script('keys', ['create', 'alice'], { INVENTORY_DB: ctx.db });
  expectExit(created, 0, 'keys create');
  assert.match(created.stdout, KEY_LINE);
  const key = created.stdout.trim();
  assert.not.match(created.stderr, key, 'the key is on stdout only');

  const rows = await query(ctx, 'SELECT * FROM api_keys');
  assert.is(rows.length, 1);
  const row = rows[0]!;
  assert.is(row.name, 'alice');
  assert.is(row.hash, createHash('sha256').update(key).digest('hex'));
  assert.is(row.created_by, operator);
  assert.match(String(row.created_at), ISO_MS);
  assert.is(row.revoked_at, null);
  for (const [column, value] of Object.entries(row)) {
    assert.not.ok(String(value).includes(key), `column ${column} holds the key`);
  }

  // --db wins over INVENTORY_DB: the other file is never created.
  const other = join(ctx.dir, 'other.db');
  const listed = script('keys', ['list', '--db', ctx.db], { INVENTORY_DB: other });
  expectExit(listed, 0, 'keys list');
  assert.not.ok(existsSync(other), '--db is used, not INVENTORY_DB');
  const lines = listed.stdout.trimEnd().split('\n');
  assert.is(lines.length, 2, listed.stdout);
  assert.match(lines[0]!, /NAME\s+SCOPE\s+CREATED\s+CREATED BY\s+REVOKED/);
  assert.match(lines[1]!, new RegExp(`^alice\\s+read-write\\s+${String(row.created_at).replace(/\./g, '\\.')}\\s+${operator}\\s+-\\s+-$`));
  const output = listed.stdout + listed.stderr;
  assert.not.ok(output.includes(key), 'list shows the key');
  assert.not.ok(output.includes(String(row.hash)), 'list shows the hash');
  assert.not.match(output, /pinv_/);
});

keys('revoke sets revoked_at; an unknown name and a taken name exit 1', async (ctx) => {
  await createDb(ctx);
  const created = script('keys', ['create', 'bob', '--db', ctx.db]);
  expectExit(created, 0, 'keys create');
  const key = created.stdout.trim();

  const revoked = script('keys', ['revoke', 'bob', '--db', ctx.db]);
  expectExit(revoked, 0, 'keys revoke');
  const row = (await query(ctx, 'SELECT * FROM api_keys WHERE name = ?', 'bob'))[0]!;
  assert.match(String(row.revoked_at), ISO_MS);
  assert.is(row.revoked_by, operator);

  const listed = script('keys', ['list', '--db', ctx.db]);
  expectExit(listed, 0, 'keys list');
  assert.match(listed.stdout, new RegExp(`^bob\\s.*\\s${String(row.revoked_at).replace(/\./g, '\\.')}\\s+${operator}$`, 'm'));
  assert.not.ok(listed.stdout.includes(key));

  const unknown = script('keys', ['revoke', 'nobody', '--db', ctx.db]);
  expectFailure(unknown, /^error: no key named "nobody" in [^\n]+\n$/, 'keys revoke of an unknown name');
  assert.is(unknown.stdout, '');

  // A revoked key's name stays taken.
  const taken = script('keys', ['create', 'bob', '--db', ctx.db]);
  expectFailure(taken, /^error: a key named "bob" exists already/, 'keys create of a taken name');
  assert.is(taken.stdout, '', 'no key is printed');
  const all = await query(ctx, 'SELECT name, hash FROM api_keys');
  assert.is(all.length, 1);
  assert.is(all[0]!.hash, row.hash, 'the first key is untouched');
});

keys('create --read-only makes a key whose scope the key log holds; list shows each scope', async (ctx) => {
  await createDb(ctx);
  expectExit(script('keys', ['create', 'writer', '--db', ctx.db]), 0, 'keys create');
  const created = script('keys', ['create', 'auditor', '--read-only', '--db', ctx.db]);
  expectExit(created, 0, 'keys create --read-only');
  assert.match(created.stdout, KEY_LINE);
  assert.match(created.stderr, /^created read-only key "auditor" in /);
  const events = await query(ctx, "SELECT name, data FROM api_key_events WHERE type = 'KeyCreated' ORDER BY seq");
  assert.equal(
    events.map((e) => [e.name, e.data]),
    [
      ['writer', ''],
      ['auditor', '{"scope":"read-only"}'],
    ],
  );
  const listed = script('keys', ['list', '--db', ctx.db]);
  expectExit(listed, 0, 'keys list');
  assert.match(listed.stdout, /^writer\s+read-write\s/m);
  assert.match(listed.stdout, /^auditor\s+read-only\s/m);
  expectUsageError(script('keys', ['list', '--read-only', '--db', ctx.db]), /--read-only goes with create only/, 'list --read-only');
});

keys('usage errors exit 2 with one error line and see --help; --help exits 0', async (ctx) => {
  expectUsageError(
    script('keys', ['--db', ctx.db]),
    /name an action: create, list, revoke, endorse-signing, add-signing, retire-signing or list-signing/,
    'keys without an action',
  );
  expectUsageError(script('keys', ['create', 'a b', '--db', ctx.db]), /invalid NAME "a b"/, 'keys create "a b"');
  expectUsageError(
    script('keys', ['retire-signing', 'abc', '--db', ctx.db]),
    /invalid KEYID "abc": a signing key's id is 16 lowercase hex/,
    'keys retire-signing abc',
  );
  expectUsageError(
    script('keys', ['frob', '--db', ctx.db]),
    /unknown action frob: the actions are create, list, revoke, endorse-signing, add-signing, retire-signing and list-signing/,
    'keys frob',
  );
  // The name rule the error gives is the one --help gives.
  const rule = 'starting with a letter or digit';
  assert.ok(script('keys', ['create', '.x', '--db', ctx.db]).stderr.includes(rule), 'the error says the rule');
  assert.ok(script('keys', ['--help']).stdout.replace(/\s+/g, ' ').includes(rule), '--help says it');
  assert.ok(await noDatabase(ctx), 'a usage error opens no database');
  // No key is printed for a database that does not persist.
  expectUsageError(script('keys', ['create', 'carol', '--db', '']), /--db must not be empty/, 'keys create --db ""');
  expectUsageError(script('keys', ['list'], { INVENTORY_DB: '' }), /INVENTORY_DB must not be empty/, 'INVENTORY_DB=""');

  const help = script('keys', ['--help']);
  expectExit(help, 0, 'keys --help');
  assert.match(help.stdout, /^Usage: scripts\/keys create NAME/);
  assert.match(help.stdout, /revoke NAME/);
  assert.match(help.stdout, /Exit status: 0 success, 1 failure, 2 usage error/);
});

keys.run();
