// Graceful shutdown of the service process: on SIGTERM or SIGINT it takes no new
// connections, lets the requests in flight finish (their commits included), closes the
// database and exits 0 within a bounded time.
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { openDatabase } from '../src/store/database.ts';
import { sqliteStoreOn } from '../src/store/sqlite/store.ts';
import { commandsOn, send } from './helpers.ts';
import { killAll, startService, withTimeout } from './service.ts';

const shutdown = suite<{ dir: string; path: string; key: string }>('graceful shutdown', { dir: '', path: '', key: '' });
shutdown.before.each(async (ctx) => {
  ctx.dir = mkdtempSync(join(tmpdir(), 'inv-shutdown-'));
  ctx.path = join(ctx.dir, 'inventory.db');
  const db = openDatabase(ctx.path);
  ctx.key = await sqliteStoreOn(db).keys.create('k', 'test');
  await commandsOn(db, Date.now).handle(
    { type: 'TrackPet', petId: 7n, quantity: 1, status: 'available' },
    { actor: 'cli:t', requestId: 't' },
  );
  db.close();
});
shutdown.after.each(async (ctx) => {
  await killAll();
  rmSync(ctx.dir, { recursive: true, force: true });
});

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  shutdown(`${signal}: a PATCH in flight completes and is committed; new connections are refused; exit 0`, async ({ path, key }) => {
    const service = await startService(path, { expectKey: false });
    // A PATCH whose body has not fully arrived when the signal comes.
    const socket = connect(service.port, '127.0.0.1');
    await new Promise((r) => socket.once('connect', r));
    let answer = '';
    socket.on('data', (c: Buffer) => (answer += c.toString()));
    const body = '{"quantity": 42}';
    socket.write(
      `PATCH /v1/inventory/7 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nX-Request-Id: in-flight\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`,
    );
    await new Promise((r) => setTimeout(r, 200));
    const started = Date.now();
    service.proc.kill(signal);
    await new Promise((r) => setTimeout(r, 300));

    const refused = await send(service.port, { path: '/healthz' }).then(
      () => 'answered',
      (err: NodeJS.ErrnoException) => err.code,
    );
    assert.is(refused, 'ECONNREFUSED', 'no new connections while shutting down');
    assert.is(service.proc.exitCode, null, 'still running while a request is in flight');

    socket.write(body.slice(5));
    const exit = await withTimeout(service.exited, 10_000, 'the service to exit');
    assert.match(answer, /^HTTP\/1\.1 200 /);
    assert.match(answer, /"quantity":42/);
    assert.is(exit.code, 0);
    assert.ok(Date.now() - started < 10_000);
    assert.match(service.out(), /"msg":"stopped"/);

    const db = new Database(path, { readonly: true });
    assert.is(db.prepare("SELECT json_extract(data, '$.quantity') FROM events WHERE request_id = 'in-flight'").pluck().get(), 42);
    db.close();
  });
}

shutdown('an idle service exits 0 at once on SIGTERM', async ({ path }) => {
  const service = await startService(path, { expectKey: false });
  const { code, ms } = await service.stop();
  assert.is(code, 0);
  assert.ok(ms < 3000, `took ${ms} ms`);
});

shutdown.run();
