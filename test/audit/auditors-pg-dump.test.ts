// docs/auditors.md's consistent copy of a PostgreSQL database: pg_dump as the read-only
// role of the scaling guide (inventory_auditor, its grants as written there), with the
// flags the page gives; restored, the copy verifies to the digest of the original.
import { randomBytes } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { trackPets } from '../kit/fixtures.ts';
import { root, tempDir } from '../kit/paths.ts';
import { dumpableDatabases } from '../kit/pg-dump.ts';
import type { TestDatabase } from '../kit/postgres-server.ts';
import { runScript } from '../kit/scripts.ts';
import { execute } from '../kit/sql.ts';
import { openStore } from '../kit/stores.ts';
import { needing, tools } from '../kit/tools.ts';

const test = suite("the auditors' guide: pg_dump as inventory_auditor [postgres]");

const run = (url: string, sql: string) => execute({ target: { name: 'postgres' }, db: url }, sql);

needing(test, [tools.pgDump, tools.pgRestore])(
  'the dump the page gives works as the auditor role, and verifies to the same digest',
  async () => {
    const page = readFileSync(join(root, 'docs/auditors.md'), 'utf8');
    const command = /`(pg_dump --serializable-deferrable\s+--exclude-table=service_health)`/.exec(page)?.[1]?.split(/\s+/);
    assert.ok(command, 'the page gives the pg_dump command');
    const grants = readFileSync(join(root, 'docs/scaling.md'), 'utf8')
      .split('\n')
      .filter((line) => /^GRANT .* TO .*inventory_auditor/.test(line));
    assert.ok(grants.length >= 2, "the scaling guide's grants to inventory_auditor");

    const databases: TestDatabase[] = [];
    const scratch = tempDir('auditors-dump-');
    // Roles belong to the server: a name of this run's own, the scaling guide's grants.
    const role = `auditor_${randomBytes(6).toString('hex')}`;
    // The database the role has grants in, once it exists.
    let created: string | undefined;
    try {
      const [source, target] = await dumpableDatabases(databases);
      const store = await openStore(source);
      try {
        await trackPets(
          store,
          [1, 2].map((petId) => ({ petId, quantity: petId })),
        );
      } finally {
        await store.close();
      }
      await run(
        source,
        [
          `CREATE ROLE ${role} LOGIN PASSWORD 'change-me-auditor'`,
          `GRANT CONNECT ON DATABASE ${new URL(source).pathname.slice(1)} TO ${role}`,
          ...grants.map((line) => line.replace(/ TO .*$/, ` TO ${role}`)),
        ].join(';\n'),
      );
      created = source;
      const auditor = new URL(source);
      auditor.username = role;
      auditor.password = 'change-me-auditor';
      const dump = scratch.path('inventory.dump');
      const dumped = spawnSync(command[0]!, [...command.slice(1), '--format=custom', `--file=${dump}`, auditor.toString()], {
        encoding: 'utf8',
      });
      assert.is(dumped.status, 0, dumped.stderr);
      // The whole database is not the auditor's to read: the flag is needed.
      const whole = spawnSync('pg_dump', ['--serializable-deferrable', '--format=custom', `--file=${dump}.whole`, auditor.toString()], {
        encoding: 'utf8',
      });
      assert.is.not(whole.status, 0, 'a dump of the whole database fails as the auditor');
      assert.match(whole.stderr, /service_health/);

      const restored = spawnSync('pg_restore', [`--dbname=${target}`, '--no-owner', '--no-privileges', '--exit-on-error', dump], {
        encoding: 'utf8',
      });
      assert.is(restored.status, 0, restored.stderr);
      const [original, copy] = [await runScript('verify-log', [], { db: source }), await runScript('verify-log', [], { db: target })];
      assert.is(original.status, 0, original.stderr);
      assert.is(copy.status, 0, copy.stderr);
      assert.is(copy.stdout, original.stdout, 'the copy verifies to the digest of the original');
    } finally {
      if (created !== undefined) await run(created, `DROP OWNED BY ${role}; DROP ROLE ${role}`);
      for (const d of databases) await d.cleanup();
      scratch.cleanup();
    }
  },
);

test.run();
