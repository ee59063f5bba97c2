// The scaling guide's least-privilege setup for PostgreSQL, run as written: the statements of its
// two SQL blocks, scripts/migrate as the owner between them, then the service started as
// its own role. The service works under that role and cannot change history; the owner's
// changes are refused by the triggers; the auditor reads and cannot write.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { root } from '../kit/paths.ts';
import { freshPostgresDatabase, postgresServerUrl, runSql } from '../kit/postgres-server.ts';
import { runScript } from '../kit/scripts.ts';
import { killAll, startService } from '../kit/service.ts';

const ROLES = ['inventory_owner', 'inventory_service', 'inventory_auditor'];

/** The ```sql blocks of the scaling guide, in order. */
function readmeSqlBlocks(): string[] {
  const page = readFileSync(join(root, 'docs/scaling.md'), 'utf8');
  return [...page.matchAll(/```sql\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

function as(url: string, user: string, password: string): string {
  const u = new URL(url);
  u.username = user;
  u.password = password;
  return u.toString();
}

const run = runSql;

/** The SQLSTATE of the error sql raises, or 'ok'. */
async function outcome(url: string, sql: string): Promise<string> {
  return run(url, sql).then(
    () => 'ok',
    (error: { code?: string }) => error.code ?? 'no code',
  );
}

test('the documented roles: the service works as its role and can only add events; auditors only read', async () => {
  const blocks = readmeSqlBlocks();
  assert.is(blocks.length, 2, 'two SQL blocks: the roles, then the grants after migrate');
  const database = await freshPostgresDatabase();
  // Roles belong to the server, not the database: none may be left from an earlier run.
  await run(postgresServerUrl(), ROLES.map((r) => `DROP ROLE IF EXISTS ${r};`).join('\n'));
  try {
    await run(database.url, blocks[0]!);
    const owner = as(database.url, 'inventory_owner', 'change-me-owner');
    const service = as(database.url, 'inventory_service', 'change-me-service');
    const auditor = as(database.url, 'inventory_auditor', 'change-me-auditor');

    // Before the schema exists, the service's role is told which role makes it, not to
    // run migrate as itself (which fails with "permission denied for schema public").
    const listedEarly = await runScript('keys', ['list'], { db: service });
    assert.is(listedEarly.status, 1, listedEarly.stderr);
    assert.match(
      listedEarly.stderr,
      /run scripts\/migrate --db .*, as the role that owns the schema \(inventory_owner in docs\/scaling\.md\), not the service's role/,
    );
    const migratedAsService = await runScript('migrate', [], { db: service });
    assert.is(migratedAsService.status, 1, migratedAsService.stderr);
    assert.match(migratedAsService.stderr, /permission denied for schema public: the schema is made by the role that owns it/);
    const migrated = await runScript('migrate', [], { db: owner });
    assert.is(migrated.status, 0, migrated.stderr);
    assert.not.match(migrated.stdout + migrated.stderr, /change-me-owner/, 'the password is never printed');
    await run(owner, blocks[1]!);
    const tracked = await runScript('track', ['7', '--quantity', '3'], { db: owner });
    assert.is(tracked.status, 0, tracked.stderr);
    // A rebuild swaps in a new inventory table: the service and the auditor keep their grants on it.
    const rebuilt = await runScript('rebuild-projection', [], { db: owner });
    assert.is(rebuilt.status, 0, rebuilt.stderr);

    const instance = await startService({ db: service, expectKey: true });
    const key = instance.bootstrapKey!;
    const patched = await instance.request({
      method: 'PATCH',
      path: '/v1/inventory/7',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: '{"quantity": 5}',
    });
    assert.is(patched.status, 200, patched.text);
    const listed = await instance.get('/v1/inventory', key);
    assert.is(listed.status, 200);
    assert.match(listed.text, /"quantity":5/);
    // A PATCH with an Idempotency-Key stores its answer, and its retry reads it back.
    const keyed = () =>
      instance.request({
        method: 'PATCH',
        path: '/v1/inventory/7',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': 'roles-1' },
        body: '{"quantity": 6}',
      });
    assert.is((await keyed()).status, 200);
    assert.is((await keyed()).headers['idempotent-replayed'], 'true');
    assert.is(await outcome(service, "DELETE FROM idempotency_keys WHERE expires_at < '2000'"), 'ok', 'expiry may remove records');
    assert.match((await instance.get('/metrics')).text, /^inventory_idempotency_records 1$/m);
    assert.is((await instance.get('/readyz')).status, 200, 'ready: its probe may write where it must');
    assert.not.match(instance.out() + instance.err(), /change-me-service/, 'the password is never logged');
    await instance.stop();

    // 42501: insufficient_privilege; P0001: the append-only trigger's exception.
    assert.is(await outcome(service, "UPDATE events SET actor = 'x'"), '42501', 'the service cannot change an event');
    assert.is(await outcome(service, 'DELETE FROM events'), '42501', 'nor remove one');
    assert.is(await outcome(owner, "UPDATE events SET actor = 'x'"), 'P0001', 'the owner is stopped by the trigger');
    assert.is(await outcome(owner, 'TRUNCATE events'), 'P0001', 'TRUNCATE too');
    // A rebuild as the service's role is refused by PostgreSQL; the refusal names the role to use.
    const rebuildAsService = await runScript('rebuild-projection', [], { db: service });
    assert.is(rebuildAsService.status, 1, rebuildAsService.stderr);
    assert.match(rebuildAsService.stderr, /^error: permission denied for schema public: .*owns the schema.*inventory_owner/m);
    assert.is(await outcome(auditor, 'SELECT * FROM stock_adjustments'), 'ok');
    assert.is(await outcome(auditor, 'SELECT * FROM api_key_events'), 'ok', 'auditors read the key log');
    assert.is(await outcome(auditor, "INSERT INTO api_keys VALUES ('a', 'b', 'c', 'd')"), '42501', 'auditors only read');
    // Key hashes are in the key log, which the chain covers: an auditor reads them to
    // verify it (a hash of a random 128-bit key does not let anyone authenticate).
    assert.is(await outcome(auditor, 'SELECT hash FROM api_keys'), 'ok', 'auditors check api_keys against the key log');

    // Every read-only command works under the auditor's grants, and needs no more.
    for (const [command, args, expected] of [
      ['verify-log', [], /^\d+:[0-9a-f]{64}$/m],
      ['audit', ['--pet', '7'], /\s3\s+5\s+2\s+bootstrap\s/],
      ['stock-at', ['--at', new Date(Date.now() + 60_000).toISOString()], /^\s*7\s+6\s+available\s/m],
      ['keys', ['list'], /bootstrap/],
      ['rebuild-projection', ['--check'], /^checked in .* 0 differ$/m],
    ] as const) {
      const result = await runScript(command, [...args], { db: auditor });
      assert.is(result.status, 0, `${command} as the auditor: ${result.stderr}`);
      assert.match(result.stdout, expected, `${command} as the auditor: ${result.stdout}`);
      assert.not.match(result.stdout + result.stderr, /change-me-auditor/, 'the password is never printed');
    }
  } finally {
    await killAll();
    await database.cleanup();
    await run(postgresServerUrl(), ROLES.map((r) => `DROP ROLE IF EXISTS ${r};`).join('\n'));
  }
});

test.run();
