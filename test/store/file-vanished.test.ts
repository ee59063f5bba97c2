// The database file is deleted, or replaced by another file, under a running service:
// the service keeps its open file, so without a check a PATCH would be answered 200 for
// a write into a file nobody will open again. It must answer 503 and say why instead,
// and never start a writer on whatever now lies at the path.
import { copyFileSync, existsSync, renameSync, rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import Database from 'better-sqlite3';
import { openDatabase } from '../../src/store/sqlite/database.ts';
import { StoreUnavailable } from '../../src/store/health.ts';
import { recordFileIdentity } from '../../src/store/sqlite/file-identity.ts';
import { makeWriter } from '../../src/store/sqlite/writer/writer.ts';
import { startApp, type TestApp } from '../kit/app.ts';
import { assertErrorShape, type ErrorBody, type Response } from '../kit/http.ts';

/** The service as it runs: a file database, the writer in its thread, pet 7 tracked. */
interface ThreadApp extends TestApp {
  path: string;
  dir: string;
  patchQuantity(quantity: number): Promise<Response>;
}

async function startThreadApp(): Promise<ThreadApp> {
  const t = await startApp({ writer: 'thread' });
  await t.track(7, 1);
  return Object.assign(t, { path: t.db, dir: dirname(t.db), patchQuantity: (quantity: number) => t.patch(7, { quantity }) });
}

const vanished = suite<{ app: ThreadApp }>(
  'the database file is no longer at its path (SQLite only: file identity)',
  {} as { app: ThreadApp },
);
vanished.before.each(async (ctx) => {
  ctx.app = await startThreadApp();
});
vanished.after.each(async (ctx) => {
  await ctx.app.close();
});

async function refusesEverything(app: ThreadApp, reason: RegExp): Promise<void> {
  const started = Date.now();
  const write = await app.patchQuantity(40);
  assertErrorShape(write, 503, 'unavailable');
  const ready = await app.get('/readyz');
  assert.is(ready.status, 503);
  assert.match(ready.json<ErrorBody>().message, reason);
  assert.ok(Date.now() - started < 2000, 'noticed within 2 s');
  // Nothing is acknowledged afterwards, probes a second apart included.
  for (let i = 0; i < 5; i++) {
    app.tick(1000);
    assert.is((await app.get('/readyz')).status, 503);
    assert.is((await app.patchQuantity(50 + i)).status, 503);
  }
}

vanished('deleted (rm inventory.db*): writes and /readyz answer 503, and no new empty file appears', async ({ app }) => {
  assert.is((await app.patchQuantity(2)).status, 200);
  for (const suffix of ['', '-wal', '-shm']) rmSync(`${app.path}${suffix}`, { force: true });
  await refusesEverything(app, /deleted/);
  assert.not.ok(existsSync(app.path), 'no writer was started onto a new, empty file');
});

vanished('replaced by another file: writes and /readyz answer 503, and the other file is not written', async ({ app }) => {
  assert.is((await app.patchQuantity(2)).status, 200);
  const other = `${app.path}.other`;
  copyFileSync(app.path, other);
  renameSync(other, app.path);
  await refusesEverything(app, /replaced/);
  const check = new Database(app.path, { readonly: true });
  try {
    const refused = check.prepare("SELECT count(*) FROM events WHERE json_extract(data, '$.quantity') >= 40").pluck();
    assert.is(refused.get(), 0, 'nothing written to the newcomer');
  } finally {
    check.close();
  }
});

vanished('the writer checks again just before a batch commits', ({ app }) => {
  // The writer thread's own check, without the event loop's in front of it.
  const db = openDatabase(`${app.dir}/direct.db`);
  try {
    const identity = recordFileIdentity(`${app.dir}/direct.db`);
    const writer = makeWriter(db, { fileProblem: () => identity.problem() });
    writer.probeWrite();
    rmSync(`${app.dir}/direct.db`);
    assert.throws(
      () => writer.probeWrite(),
      (e: unknown) => e instanceof StoreUnavailable && /deleted/.test(e.message),
    );
    const before = db.prepare('SELECT count(*) FROM events').pluck().get();
    // Passes the check at the start, fails the one before COMMIT: nothing of it stays.
    let calls = 0;
    const flips = makeWriter(db, { fileProblem: () => (calls++ === 0 ? undefined : 'the database file was deleted') });
    assert.throws(
      () =>
        flips.appendBatch([
          {
            meta: { actor: 'cli:test', requestId: 'late' },
            recordedAt: '2026-01-02T03:04:05.678Z',
            appends: [{ petId: 9n, expectedVersion: 0, events: [{ type: 'PetTracked', data: { quantity: 1, status: 'available' } }] }],
          },
        ]),
      (e: unknown) => e instanceof StoreUnavailable,
    );
    assert.is(db.prepare('SELECT count(*) FROM events').pluck().get(), before, 'rolled back');
  } finally {
    db.close();
  }
});

vanished.run();
