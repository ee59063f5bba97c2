// Graceful shutdown of the service process: on SIGTERM or SIGINT it takes no new
// connections, lets the requests in flight finish (their commits included), closes the
// database and exits 0 within a bounded time.
import { connect } from 'node:net';
import * as assert from 'uvu/assert';
import { createKey, eventsOf, trackPets } from './kit/fixtures.ts';
import { send } from './kit/http.ts';
import { killAll, startService, withTimeout } from './kit/service.ts';
import { targetSuites } from './kit/suites.ts';

const shutdown = targetSuites<{ path: string; cleanup: () => Promise<void>; key: string }>('graceful shutdown', {
  async beforeEach(ctx) {
    const fresh = await ctx.target.fresh();
    ctx.path = fresh.db;
    ctx.cleanup = fresh.cleanup;
    const store = await ctx.target.open(ctx.path);
    try {
      ctx.key = await createKey(store, 'k');
      await trackPets(store, [{ petId: 7, quantity: 1 }], 'cli:t');
    } finally {
      await store.close();
    }
  },
  async afterEach(ctx) {
    await killAll();
    await ctx.cleanup();
  },
});

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  shutdown(
    `${signal}: a PATCH in flight completes and is committed; new connections are refused; exit 0`,
    async ({ target, path, key }) => {
      const service = await startService({ db: path, expectKey: false });
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
      service.kill(signal);
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

      const store = await target.open(path, { readonly: true });
      try {
        const inFlight = (await eventsOf(store)).filter((e) => e.requestId === 'in-flight');
        assert.equal(
          inFlight.map((e) => (JSON.parse(e.data) as { quantity: number }).quantity),
          [42],
        );
      } finally {
        await store.close();
      }
    },
  );
}

shutdown('an idle service exits 0 at once on SIGTERM', async ({ path }) => {
  const service = await startService({ db: path, expectKey: false });
  const { code, ms } = await service.stop();
  assert.is(code, 0);
  assert.ok(ms < 3000, `took ${ms} ms`);
});

shutdown.run();
