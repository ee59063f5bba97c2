// A SQLite database whose files the service may not write, though its -wal and -shm are
// there to read (SQLite then opens it read-only without a word): the service starts and
// serves reads, /readyz answers 503 with the reason from its first answer, and a PATCH's
// 503 says the database is read-only instead of "retry later".
import { execFileSync } from 'node:child_process';
import { chmodSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { trackPets } from '../kit/fixtures.ts';
import { assertErrorShape } from '../kit/http.ts';
import { tempDir, type TempDir } from '../kit/paths.ts';
import { killAll, startService } from '../kit/service.ts';
import { sqliteTarget } from '../kit/sqlite-target.ts';

/**
 * Makes dir and its files read-only in a way this user cannot ignore: root ignores file
 * modes, so root gets the immutable attribute (chattr), anyone else modes without write.
 * Returns what undoes it.
 */
function makeReadOnly(dir: string): () => void {
  const paths = [...readdirSync(dir).map((name) => join(dir, name)), dir];
  if (process.getuid?.() === 0) {
    execFileSync('chattr', ['+i', ...paths]);
    return () => execFileSync('chattr', ['-i', ...paths]);
  }
  for (const path of paths) chmodSync(path, path === dir ? 0o555 : 0o444);
  return () => {
    for (const path of paths) chmodSync(path, path === dir ? 0o700 : 0o600);
  };
}

const test = suite<{ data: TempDir; keys: TempDir; writable?: () => void; holder?: Database.Database }>(
  'a SQLite database the service may not write',
);
test.before.each((ctx) => {
  ctx.data = tempDir('inv-read-only-');
  ctx.keys = tempDir('inv-read-only-key-');
});
test.after.each(async (ctx) => {
  await killAll();
  ctx.writable?.();
  ctx.holder?.close();
  ctx.data.cleanup();
  ctx.keys.cleanup();
});

test('starts and reads; /readyz says read-only from its first answer, and so does a PATCH', async (ctx) => {
  const db = ctx.data.path('inventory.db');
  const env = { INVENTORY_SIGNING_KEY: ctx.keys.path('signing-key.pem') };
  const first = await startService({ db, expectKey: true, env });
  const key = first.bootstrapKey!;
  const auth = { Authorization: `Bearer ${key}` };
  assert.is((await first.stop()).code, 0);
  const store = await sqliteTarget().open(db);
  try {
    await trackPets(store, [{ petId: 7, quantity: 3 }], 'cli:t');
  } finally {
    await store.close();
  }
  // Another connection keeps the -wal and -shm there, as a process still reading would.
  ctx.holder = new Database(db);
  ctx.holder.prepare('SELECT count(*) FROM events').get();
  assert.equal(readdirSync(ctx.data.dir).sort(), ['inventory.db', 'inventory.db-shm', 'inventory.db-wal']);
  ctx.writable = makeReadOnly(ctx.data.dir);

  const service = await startService({ db, expectKey: false, env });
  const ready = await service.request({ path: '/readyz' });
  const body = assertErrorShape(ready, 503, 'unavailable', 'the first answer');
  assert.match(body.message, /read-only/);
  assert.is((await service.get('/v1/inventory/7', key)).status, 200, 'reads are served');
  const patch = await service.request({
    method: 'PATCH',
    path: '/v1/inventory/7',
    headers: { ...auth, 'Content-Type': 'application/json' },
    body: '{"quantity":4}',
  });
  const refused = assertErrorShape(patch, 503, 'unavailable');
  assert.match(refused.message, /the database is read-only to the service/);
  assert.not.match(refused.message, /retry later|SQLITE/);
  assertErrorShape(await service.request({ path: '/readyz' }), 503, 'unavailable', 'still');
});

test.run();
