// The service's writer thread stops on its own (as a crash or running out of memory
// would stop it): writes are answered 503 at once, /readyz answers 503 and says why,
// reads go on, and the health probe starts a new thread, which refuses to create a
// database in place of one that vanished, until the file is back.
import { renameSync } from 'node:fs';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { openSqliteStore } from '../../src/store/sqlite/store.ts';
import { startWriterThread, type ThreadWriter } from '../../src/store/sqlite/writer/worker-client.ts';
import { startApp, type TestApp } from '../kit/app.ts';
import { assertErrorShape, type ErrorBody, type ItemBody, type Response } from '../kit/http.ts';

interface Ctx {
  t: TestApp;
  path: string;
  threads: ThreadWriter[];
}

const crash = suite<Ctx>('the writer thread stops on its own (SQLite only: the worker thread)', {} as Ctx);

crash.before.each(async (ctx) => {
  ctx.threads = [];
  // Keeps each thread's handle, so the test can stop one as a crash would.
  ctx.t = await startApp({
    open: (db, now) =>
      openSqliteStore(db, {
        writer: 'thread',
        now,
        startWriter: async (...args) => {
          const thread = await startWriterThread(...args);
          ctx.threads.push(thread);
          return thread;
        },
      }),
  });
  ctx.path = ctx.t.db;
  await ctx.t.track(7, 1);
});

crash.after.each(async (ctx) => {
  await ctx.t.close();
});

const patch = (ctx: Ctx, quantity: number): Promise<Response> => ctx.t.patch(7, { quantity });
const get = (ctx: Ctx, path: string): Promise<Response> => ctx.t.get(path);

crash('writes and /readyz answer 503 with the reason; reads go on; a new thread takes over once the file is there', async (ctx) => {
  assert.is((await patch(ctx, 2)).status, 200);
  assert.is((await get(ctx, '/readyz')).status, 200);

  // The file vanishes (moved away), then the thread stops.
  renameSync(ctx.path, `${ctx.path}.away`);
  await ctx.threads[0]!.terminate();

  const write = await patch(ctx, 3);
  assertErrorShape(write, 503, 'unavailable');
  assert.is(write.headers['retry-after'], '1');

  const ready = await get(ctx, '/readyz');
  assert.is(ready.status, 503);
  // The path no longer names the file: said first, and no new thread is even tried.
  assert.match(ready.json<ErrorBody>().message, /the database cannot take writes \(the database file was deleted/);
  assert.is(ctx.threads.length, 1, 'no thread was started on a database that is not there');

  // Reads are served by this thread's own connections.
  const list = await get(ctx, '/v1/inventory');
  assert.is(list.status, 200);
  assert.equal(list.json<ItemBody[]>()[0]!.quantity, 2);

  // Within the second, no new attempt: still 503 with the same reason.
  assert.is((await get(ctx, '/readyz')).status, 503);
  assert.is(ctx.threads.length, 1);

  renameSync(`${ctx.path}.away`, ctx.path);
  ctx.t.tick(1000);
  const back = await get(ctx, '/readyz');
  assert.is(back.status, 200, back.text);
  assert.is(ctx.threads.length, 2);
  assert.is((await patch(ctx, 4)).status, 200);
  assert.equal((await get(ctx, '/v1/inventory')).json<ItemBody[]>()[0]!.quantity, 4);
});

crash('with the database still there, the first /readyz after the stop starts a new thread and answers 200', async (ctx) => {
  await ctx.threads[0]!.terminate();
  assert.is((await patch(ctx, 5)).status, 503);
  const ready = await get(ctx, '/readyz');
  assert.is(ready.status, 200, ready.text);
  assert.is(ctx.threads.length, 2);
  assert.is((await patch(ctx, 6)).status, 200);
});

crash.run();
