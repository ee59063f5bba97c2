// The service's writer thread stops on its own (as a crash or running out of memory
// would stop it): writes are answered 503 at once, /readyz answers 503 and says why,
// reads go on, and the health probe starts a new thread, which refuses to create a
// database in place of one that vanished, until the file is back.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { buildApp } from '../src/app.ts';
import { commandsFor } from '../src/commands.ts';
import { createHttpServer } from '../src/http/node-server.ts';
import { createLogger } from '../src/logger.ts';
import type { InventoryStore } from '../src/store/port.ts';
import { openSqliteStore } from '../src/store/sqlite/store.ts';
import { startWriterThread, type ThreadWriter } from '../src/store/sqlite/worker-client.ts';
import { send, type ErrorBody, type ItemBody, type Response } from './helpers.ts';

interface Ctx {
  dir: string;
  path: string;
  store: InventoryStore;
  threads: ThreadWriter[];
  server: Server;
  port: number;
  key: string;
  clock: number;
}

const crash = suite<Ctx>('the writer thread stops on its own', {} as Ctx);

crash.before.each(async (ctx) => {
  ctx.dir = mkdtempSync(join(tmpdir(), 'inv-writer-'));
  ctx.path = join(ctx.dir, 'inventory.db');
  ctx.threads = [];
  ctx.clock = Date.parse('2026-01-02T03:04:05.678Z');
  // Keeps each thread's handle, so the test can stop one as a crash would.
  ctx.store = await openSqliteStore(ctx.path, {
    writer: 'thread',
    startWriter: async (...args) => {
      const thread = await startWriterThread(...args);
      ctx.threads.push(thread);
      return thread;
    },
  });
  ctx.key = await ctx.store.keys.create('tester', 'test');
  await commandsFor(ctx.store).handleAll([{ type: 'TrackPet', petId: 7n, quantity: 1, status: 'available' }], {
    actor: 'cli:test',
    requestId: 'seed',
  });
  const sink = new Writable({ write: (_chunk, _encoding, done) => done() });
  const app = buildApp({ store: ctx.store, logger: createLogger('info', sink), now: () => ctx.clock });
  ctx.server = createHttpServer(app);
  await new Promise<void>((resolve) => ctx.server.listen(0, '127.0.0.1', resolve));
  ctx.port = (ctx.server.address() as AddressInfo).port;
});

crash.after.each(async (ctx) => {
  await new Promise((resolve) => ctx.server.close(resolve));
  await ctx.store.close();
  rmSync(ctx.dir, { recursive: true, force: true });
});

const patch = (ctx: Ctx, quantity: number): Promise<Response> =>
  send(ctx.port, {
    method: 'PATCH',
    path: '/v1/inventory/7',
    headers: { Authorization: `Bearer ${ctx.key}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ quantity }),
  });
const get = (ctx: Ctx, path: string): Promise<Response> => send(ctx.port, { path, headers: { Authorization: `Bearer ${ctx.key}` } });

crash('writes and /readyz answer 503 with the reason; reads go on; a new thread takes over once the file is there', async (ctx) => {
  assert.is((await patch(ctx, 2)).status, 200);
  assert.is((await get(ctx, '/readyz')).status, 200);

  // The file vanishes (moved away), then the thread stops.
  renameSync(ctx.path, `${ctx.path}.away`);
  await ctx.threads[0]!.terminate();

  const write = await patch(ctx, 3);
  assert.is(write.status, 503);
  assert.equal(write.json<ErrorBody>().code, 'unavailable');
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
  ctx.clock += 1000;
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
