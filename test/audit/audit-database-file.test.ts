// scripts/audit and the database file (SQLite only: paths and bytes): a missing one is
// an error that creates nothing, and a run never writes (test/kit/audit.ts).
import { existsSync, statSync } from 'node:fs';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { tempDir, type TempDir } from '../kit/paths.ts';
import { sqliteTarget } from '../kit/sqlite-target.ts';
import type { StoreTarget } from '../kit/stores.ts';
import { audit, expectExit, seedFixture, sha256 } from '../kit/audit.ts';

// What only a database file has: its path, its bytes.
const files = suite<{ dir: TempDir; db: string; target: StoreTarget }>('scripts/audit on the file (SQLite only: paths and bytes)');
files.before.each((ctx) => {
  ctx.dir = tempDir('inventory-audit-');
  ctx.db = ctx.dir.path('inventory.db');
  ctx.target = sqliteTarget();
});
files.after.each((ctx) => {
  ctx.dir.cleanup();
});

files('a path with no database exits 1 with a clear message and creates nothing', async (ctx) => {
  const viaOption = await audit(['--db', ctx.db]);
  expectExit(viaOption, 1, 'audit --db missing');
  assert.is(
    viaOption.stderr,
    `error: no database at ${ctx.db}: check --db or INVENTORY_DB, or create one with scripts/migrate --db ${ctx.db}\n`,
  );
  assert.is(viaOption.stdout, '');
  const viaEnv = await audit(['--format', 'jsonl'], { INVENTORY_DB: ctx.db });
  expectExit(viaEnv, 1, 'INVENTORY_DB=missing audit');
  assert.match(viaEnv.stderr, /no database at/);
  for (const suffix of ['', '-wal', '-shm', '-journal']) {
    assert.not.ok(existsSync(ctx.db + suffix), `inventory.db${suffix} was created`);
  }
});

files('a run never writes: the database file is byte for byte the same, the WAL stays empty', async (ctx) => {
  await seedFixture(ctx); // closed: the WAL is checkpointed into the file and removed
  const before = sha256(ctx.db);
  const mtime = statSync(ctx.db).mtimeMs;
  expectExit(await audit(['--db', ctx.db]), 0, 'audit');
  expectExit(
    await audit(['--format', 'jsonl', '--pet', '1', '--actor', 'bob', '--since', '2026-11-21', '--db', ctx.db]),
    0,
    'audit with filters',
  );
  assert.is(sha256(ctx.db), before, 'the main file changed');
  assert.is(statSync(ctx.db).mtimeMs, mtime, 'the main file was touched');
  // SQLite may leave an empty -wal and a -shm beside a WAL database it read; nothing is in them.
  if (existsSync(`${ctx.db}-wal`)) assert.is(statSync(`${ctx.db}-wal`).size, 0, 'the WAL grew');
});

files.run();
