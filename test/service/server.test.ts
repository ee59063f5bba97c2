// End-to-end tests of the service process: started the way `npm start` does
// (node dist/server.mjs) on a fresh database of every store, driven over HTTP
// and with the real operator scripts while it runs, and stopped with SIGTERM.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { join } from 'node:path';
import { describeTarget } from '../../src/store/open.ts';
import { root, tempDir } from '../kit/paths.ts';
import type { AddressInfo } from 'node:net';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { assertErrorShape, type RequestOptions } from '../kit/http.ts';
import { sample } from '../kit/prometheus.ts';
import { noDatabase, query } from '../kit/sql.ts';
import { FRESH_MS, type StoreTarget } from '../kit/stores.ts';
import { targetSuites } from '../kit/suites.ts';
import { runScriptSync } from '../kit/scripts.ts';
import { closedPort } from '../kit/ports.ts';
import { killAll, spawnService, startService, WAIT_MS, withTimeout, type Service } from '../kit/service.ts';

const BOOTSTRAP_START = 'This database had no API key';
// The end of its last line (which names the database with --db when it is not the default).
const BOOTSTRAP_END = /Revoke this one: scripts\/keys revoke bootstrap[^\n]*\n/;

const script = (name: string, args: string[]) => runScriptSync(name, args);

function apiKeys(ctx: Ctx): Promise<{ name: string; created_by: string; revoked_at: string | null }[]> {
  return query(ctx, 'SELECT name, created_by, revoked_at FROM api_keys ORDER BY name');
}

/** Standard error without the one-time bootstrap message. */
function stderrBesidesBootstrap(err: string): string {
  const start = err.indexOf(BOOTSTRAP_START);
  if (start < 0) return err;
  const end = BOOTSTRAP_END.exec(err.slice(start));
  assert.ok(end, `the bootstrap message is complete:\n${err}`);
  return err.slice(0, start) + err.slice(start + end.index + end[0].length);
}

/** No key, no Authorization header, no bearer credential in the logs of a service. */
function assertNoSecrets(s: Pick<Service, 'out' | 'err'>, keys: string[]): void {
  const out = s.out();
  const err = stderrBesidesBootstrap(s.err());
  for (const [name, text] of [
    ['stdout', out],
    ['stderr', err],
  ] as const) {
    for (const key of keys) assert.not.ok(text.includes(key), `${name} holds a key`);
    assert.not.ok(text.includes('Authorization'), `${name} mentions Authorization`);
    assert.not.ok(text.includes('Bearer pinv_'), `${name} holds a bearer credential`);
    assert.not.ok(/pinv_[A-Za-z0-9]/.test(text), `${name} holds something like a key`);
  }
}

/** The list, asked again every 5 ms while it is still before (its old text), within boundMs. */
async function listShowing(s: Service, key: string, before: string, boundMs: number): Promise<Awaited<ReturnType<Service['get']>>> {
  const started = performance.now();
  for (;;) {
    const res = await s.get('/v1/inventory', key);
    if (res.status !== 200 || res.text.replace(/\s/g, '') !== before) return res;
    const waited = performance.now() - started;
    if (waited >= boundMs) assert.unreachable(`the script's commit did not show within ${boundMs} ms (waited ${waited.toFixed(0)} ms)`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

function countOf(text: string, part: string): number {
  return text.split(part).length - 1;
}

interface Ctx {
  target: StoreTarget;
  db: string;
  cleanup: () => Promise<void>;
}

// The process's own behaviour (start, keys, signals, logs) on every store; the tests read
// the database with plain connections.
const server = targetSuites<Ctx>('server process', {
  async beforeEach(ctx) {
    const fresh = await ctx.target.fresh();
    ctx.db = fresh.db;
    ctx.cleanup = fresh.cleanup;
  },
  async afterEach(ctx) {
    await killAll();
    await ctx.cleanup();
  },
});

server('first start creates and prints a "bootstrap" key once; it works; a second start prints none', async (ctx) => {
  const first = await startService({ db: ctx.db, expectKey: true });
  const key = first.bootstrapKey!;
  try {
    const err = first.err();
    assert.is(countOf(err, BOOTSTRAP_START), 1, 'one bootstrap message');
    assert.match(err, /named "bootstrap"/);
    assert.match(err, new RegExp(`^    ${key}$`, 'm'), 'the key stands alone on a line, easy to copy');
    assert.equal(await apiKeys(ctx), [{ name: 'bootstrap', created_by: 'service:first-start', revoked_at: null }]);

    const res = await first.get('/v1/inventory', key);
    assert.is(res.status, 200, res.text);
    assert.equal(res.json(), []);
    const stopped = await first.stop();
    assert.is(stopped.code, 0);
    assert.is(countOf(first.err(), key), 2, 'the key is printed in the message and its curl line only');
    assertNoSecrets(first, [key]);
  } finally {
    await killAll();
  }

  const second = await startService({ db: ctx.db, expectKey: false });
  try {
    const res = await second.get('/v1/inventory', key);
    assert.is(res.status, 200, 'the bootstrap key still works');
    const stopped = await second.stop();
    assert.is(stopped.code, 0);
    assert.not.match(second.err(), /pinv_/);
    assert.not.ok(second.err().includes(BOOTSTRAP_START), 'no bootstrap message on a second start');
    assert.is((await apiKeys(ctx)).length, 1, 'no new key');
    assertNoSecrets(second, [key]);
  } finally {
    await killAll();
  }
});

server('the bootstrap message names its database: its "More keys" command, pasted as printed, makes a key there', async (ctx) => {
  const first = await startService({ db: ctx.db, expectKey: true });
  const line = /^More keys: (scripts\/keys create NAME [^\n]*?)\. Revoke this one: (scripts\/keys revoke bootstrap[^\n]*)$/m.exec(
    first.err(),
  );
  assert.ok(line, `a More keys line:\n${first.err()}`);
  const [, create, revoke] = line;
  const password = ctx.db.startsWith('postgres') ? new URL(ctx.db).password : '';
  assert.ok(create!.includes(' --db '), `${create} names the database`);
  assert.ok(revoke!.includes(' --db '), `${revoke} names the database`);
  if (password) {
    assert.not.ok(first.err().includes(password), 'the password is not shown');
    assert.match(revoke!, /the password is left out: set PGPASSWORD/);
  }
  // Pasted in another directory, where there is no data/inventory.db to fall back on.
  const elsewhere = tempDir('pasted-');
  try {
    const command = create!.replace('scripts/keys', join(root, 'scripts/keys')).replace('NAME', 'second');
    const env: NodeJS.ProcessEnv = { ...process.env, PGPASSWORD: password };
    delete env.INVENTORY_DB;
    const pasted = spawnSync('sh', ['-c', command], { cwd: elsewhere.dir, env, encoding: 'utf8', timeout: 30_000 });
    assert.is(pasted.status, 0, `${command}\n${pasted.stderr}`);
    assert.match(pasted.stdout, /^pinv_[A-Za-z0-9]{32}\n$/);
    const where = password ? `${new URL(ctx.db).host}${new URL(ctx.db).pathname}` : describeTarget(ctx.db);
    assert.match(pasted.stderr, /^created key "second" in \S+; /, 'keys says which database it used');
    assert.ok(pasted.stderr.includes(where), `keys names ${where}: ${pasted.stderr}`);
    assert.not.ok(existsSync(join(elsewhere.dir, 'data')), 'no SQLite file was made here');
    assert.equal(
      (await apiKeys(ctx)).map((k) => k.name),
      ['bootstrap', 'second'],
    );
  } finally {
    elsewhere.cleanup();
  }
});

server('two services starting together on a new file make one bootstrap key between them', async (ctx) => {
  const [a, b] = await Promise.all([startService({ db: ctx.db, expectKey: false }), startService({ db: ctx.db, expectKey: false })]);
  // The one that made the key prints it; what the other prints is read once both exited.
  const printedBy = () => [a, b].filter((s) => s.err().includes(BOOTSTRAP_START));
  const KEY = /Bearer (pinv_[A-Za-z0-9]{32})/;
  // Whichever prints it: the wait on the other ends when it exits.
  await Promise.race([a, b].map((s) => s.shows(() => KEY.test(s.err()), 'a bootstrap key printed')));
  assert.equal(
    (await apiKeys(ctx)).map((k) => k.name),
    ['bootstrap'],
  );
  const key = KEY.exec(printedBy()[0]!.err())![1]!;
  for (const s of [a, b]) assert.is((await s.get('/v1/inventory', key)).status, 200);
  for (const s of [a, b]) assert.is((await s.stop()).code, 0);
  assert.is(printedBy().length, 1, 'exactly one of them printed a key');
});

server('revoking from the CLI stops a key at once; a database with only revoked keys gets none', async (ctx) => {
  const first = await startService({ db: ctx.db, expectKey: true });
  const key = first.bootstrapKey!;
  try {
    assert.is((await first.get('/v1/inventory', key)).status, 200);
    const revoked = script('keys', ['revoke', 'bootstrap', '--db', ctx.db]);
    assert.is(revoked.status, 0, revoked.stderr);
    const res = await first.get('/v1/inventory', key);
    assertErrorShape(res, 401, 'unauthorized', 'the revoked key is refused by the running service');
    assert.match(String(res.headers['www-authenticate']), /error="invalid_token"/);
    assert.is((await first.stop()).code, 0);
    assertNoSecrets(first, [key]);
  } finally {
    await killAll();
  }

  const second = await startService({ db: ctx.db, expectKey: false });
  try {
    // A request round trip: anything printed at start has arrived by now.
    assert.is((await second.get('/v1/inventory', key)).status, 401);
    assert.is((await second.get('/readyz')).status, 200);
    assert.not.match(second.err(), /pinv_/, 'no new key printed');
    const keys = await apiKeys(ctx);
    assert.is(keys.length, 1, 'no new key created');
    assert.is(keys[0]!.name, 'bootstrap');
    assert.ok(keys[0]!.revoked_at, 'still revoked');
    assert.is((await second.stop()).code, 0);
    assert.not.match(second.err(), /pinv_/);
    assertNoSecrets(second, [key]);
  } finally {
    await killAll();
  }
});

server(
  'a key created and a pet tracked with the scripts while the service runs are live: the key at once, the pet within the bound of its store',
  async (ctx) => {
    const s = await startService({ db: ctx.db, expectKey: true });
    const bootstrapKey = s.bootstrapKey!;
    try {
      const created = script('keys', ['create', 'shop-front', '--db', ctx.db]);
      assert.is(created.status, 0, created.stderr);
      const key = created.stdout.trim();
      let res = await s.get('/v1/inventory', key);
      assert.is(res.status, 200, res.text);
      assert.equal(res.json(), []);

      const tracked = script('track', ['9007199254740993', '--quantity', '3', '--status', 'pending', '--db', ctx.db]);
      assert.is(tracked.status, 0, tracked.stderr);
      res = await listShowing(s, key, '[]', FRESH_MS[ctx.target.name]);
      assert.is(res.status, 200);
      // Raw text: a bare JSON number, exact (JSON.parse would round it).
      assert.is(res.text.replace(/\s/g, ''), '[{"petId":9007199254740993,"quantity":3,"status":"pending"}]');

      // The new key is the actor of what it changes.
      res = await s.request({
        method: 'PATCH',
        path: '/v1/inventory/9007199254740993',
        headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
        body: '{"quantity": 4}',
      });
      assert.is(res.status, 200, res.text);
      const [last] = await query(ctx, 'SELECT pet_id, type, actor FROM events ORDER BY seq DESC LIMIT 1');
      assert.equal(last, { pet_id: 9007199254740993n, type: 'QuantitySet', actor: 'shop-front' });

      assert.is((await s.stop()).code, 0);
      assertNoSecrets(s, [bootstrapKey, key]);
    } finally {
      await killAll();
    }
  },
);

server('SIGTERM: /healthz and /readyz answer 200 before; the process exits 0', async (ctx) => {
  const s = await startService({ db: ctx.db, expectKey: true });
  try {
    assert.is((await s.get('/healthz')).status, 200);
    const ready = await s.get('/readyz');
    assert.is(ready.status, 200, ready.text);
    const stopped = await s.stop();
    // Past its grace period the service would exit 1: an exit 0 is the proof of a drain in time.
    assert.is(stopped.code, 0, `exit code ${stopped.code}, signal ${stopped.signal}`);
    assert.match(s.out(), /"msg":"shutting down"/);
    assert.match(s.out(), /"msg":"stopped"/);
    assertNoSecrets(s, [s.bootstrapKey!]);
  } finally {
    await killAll();
  }
});

server('invalid configuration exits 2 and names the variable on stderr', async (ctx) => {
  const cases: [Record<string, string>, RegExp][] = [
    [{ PORT: 'abc' }, /PORT must be .*"abc"/],
    [{ LOG_LEVEL: 'loud' }, /LOG_LEVEL must be one of .*"loud"/],
  ];
  try {
    for (const [env, message] of cases) {
      const s = spawnService({ INVENTORY_DB: ctx.db, ...env });
      const { code } = await withTimeout(s.exited, WAIT_MS, `the service to exit with ${JSON.stringify(env)}`);
      assert.is(code, 2, `${JSON.stringify(env)}: exit ${code}\nstderr: ${s.err()}`);
      assert.match(s.err(), message);
      assert.not.match(s.err(), /\n\s+at /, 'no stack trace');
      assert.is(s.out(), '', 'nothing logged');
      assert.ok(await noDatabase(ctx), 'no database opened');
    }
  } finally {
    await killAll();
  }
});

server('no key, Authorization header or bearer credential ever reaches the logs', async (ctx) => {
  // trace: the most talkative level, so that nothing is hidden by the level.
  const s = await startService({ db: ctx.db, expectKey: true, env: { LOG_LEVEL: 'trace' } });
  const key = s.bootstrapKey!;
  const unknown = `pinv_${'A'.repeat(32)}`;
  try {
    const revocable = script('keys', ['create', 'temp', '--db', ctx.db]);
    assert.is(revocable.status, 0, revocable.stderr);
    const temp = revocable.stdout.trim();
    assert.is(script('keys', ['revoke', 'temp', '--db', ctx.db]).status, 0);

    const json = { 'Content-Type': 'application/json' };
    const requests: [RequestOptions, number][] = [
      [{ path: '/v1/inventory', headers: { Authorization: `Bearer ${key}` } }, 200],
      [{ path: '/v1/inventory', headers: { Authorization: `bearer ${key}` } }, 200],
      [{ path: '/v1/inventory', headers: { Authorization: `Bearer ${unknown}` } }, 401],
      [{ path: '/v1/inventory', headers: { Authorization: `Bearer ${temp}` } }, 401],
      [{ path: '/v1/inventory', headers: { Authorization: `Bearer ${key} extra` } }, 401],
      [{ path: '/v1/inventory', headers: { Authorization: `Basic ${Buffer.from(`u:${key}`).toString('base64')}` } }, 401],
      [{ path: '/v1/nowhere', headers: { Authorization: `Bearer ${key}` } }, 404],
      [{ method: 'PATCH', path: '/v1/inventory/1', headers: { Authorization: `Bearer ${key}`, ...json }, body: '{"quantity":1}' }, 404],
      // A key-like value in a body is the client's own data (the answer may quote it); it must not reach the log.
      [
        {
          method: 'PATCH',
          path: '/v1/inventory/1',
          headers: { Authorization: `Bearer ${key}`, ...json },
          body: `{"quantity":"${unknown}"}`,
        },
        400,
      ],
      [{ method: 'PATCH', path: '/v1/inventory/1', headers: { Authorization: `Bearer ${key}`, ...json }, body: '{' }, 400],
    ];
    for (const [options, status] of requests) {
      const res = await s.request(options);
      assert.is(res.status, status, `${options.method ?? 'GET'} ${options.path}: ${res.text}`);
      for (const k of [key, temp]) assert.not.ok(res.text.includes(k), 'a key in a response body');
    }
    assert.is((await s.stop()).code, 0);
    assert.ok(countOf(s.out(), '"status":') >= requests.length, 'every request was logged');
    assertNoSecrets(s, [key, unknown, temp]);
  } finally {
    await killAll();
  }
});

/** Connects, sends ten pipelined requests for a large asset, and resets the connection
 * once the answer has begun: a client that goes away mid-answer. */
function abortMidAnswer(port: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () =>
      socket.write('GET /docs/swagger-ui-bundle.js HTTP/1.1\r\nHost: localhost\r\n\r\n'.repeat(10)),
    );
    socket.on('error', reject);
    socket.once('data', () => {
      // Not reading: the answers back up on the server, which is still writing at the reset.
      socket.pause();
      setTimeout(() => {
        socket.resetAndDestroy();
        resolve();
      }, 100);
    });
  });
}

server('clients going away mid-answer: one JSON line per event at debug, counted, at most a line a second', async (ctx) => {
  const s = await startService({ db: ctx.db, expectKey: true, env: { LOG_LEVEL: 'debug' } });
  const ABORTS = 12;
  for (let i = 0; i < ABORTS; i++) await abortMidAnswer(s.port);
  // The summary of a second's aborts comes when its window closes: waited for until the
  // lines count every abort the metrics counted.
  const counted = sample((await s.get('/metrics')).text, 'inventory_client_aborts_total');
  const logged = () =>
    s
      .out()
      .split('\n')
      .filter((line) => line.includes('a client went away before its answer was sent'))
      .reduce((sum, line) => sum + ((JSON.parse(line) as { count?: number }).count ?? 0), 0);
  await s.shows(() => counted !== undefined && logged() >= counted, 'the log lines counting every abort');
  assert.is((await s.stop()).code, 0);

  assert.is(stderrBesidesBootstrap(s.err()).trim(), '', 'nothing raw on standard error');
  const lines = s.out().trimEnd().split('\n');
  const entries = lines.map((line) => {
    try {
      return JSON.parse(line) as { level: number; msg: string; count?: number };
    } catch {
      throw new Error(`not a JSON log line: ${line}`);
    }
  });
  const aborts = entries.filter((e) => e.msg === 'a client went away before its answer was sent');
  assert.ok(counted !== undefined && counted >= ABORTS, `every abort counted: ${counted}`);
  assert.ok(aborts.length > 0 && aborts.every((e) => e.level === 20), 'logged at debug');
  assert.ok(aborts.length < ABORTS, `rate-limited: ${aborts.length} lines for ${counted} aborts`);
  assert.is(
    aborts.reduce((sum, e) => sum + e.count!, 0),
    counted,
    'the lines count every abort',
  );
});

server('a first start that cannot listen (the port is taken) creates no key; the next start prints one', async (ctx) => {
  const taken = createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  const port = (taken.address() as AddressInfo).port;
  try {
    const failed = spawnService({ INVENTORY_DB: ctx.db, PORT: String(port) });
    const { code } = await withTimeout(failed.exited, WAIT_MS, 'the service to give up on a taken port');
    assert.is(code, 1, `exit ${code}\nstderr: ${failed.err()}`);
    assert.is(failed.err(), `petstore-inventory: port ${port} is taken on 127.0.0.1: stop the other service or set PORT\n`, 'one line');
    assert.not.ok(failed.err().includes(BOOTSTRAP_START), 'no key was printed');
    assert.equal(await apiKeys(ctx), [], 'so none was created: it would have been lost');
  } finally {
    await new Promise((resolve) => taken.close(resolve));
  }
  const next = await startService({ db: ctx.db, expectKey: true });
  assert.equal(
    (await apiKeys(ctx)).map((k) => k.name),
    ['bootstrap'],
  );
  assert.is((await next.get('/v1/inventory', next.bootstrapKey)).status, 200);
  assert.is((await next.stop()).code, 0);
});

server("a HOST that is not this machine's, or no name at all: one line that names HOST, exit 1", async (ctx) => {
  const cases = [
    ['192.0.2.1', 'HOST 192.0.2.1 is not an address of this machine: set HOST to one of its addresses (0.0.0.0 for all)'],
    [
      'no-such-host.invalid',
      'HOST no-such-host.invalid is not a name this machine can resolve: set HOST to one of its addresses (0.0.0.0 for all)',
    ],
  ];
  for (const [host, line] of cases) {
    const failed = spawnService({ INVENTORY_DB: ctx.db, HOST: host! });
    const { code } = await withTimeout(failed.exited, WAIT_MS, `the service to give up on HOST ${host}`);
    assert.is(code, 1, `exit ${code}\nstderr: ${failed.err()}`);
    assert.is(failed.err(), `petstore-inventory: ${line}\n`, host);
  }
  assert.equal(await apiKeys(ctx), [], 'no key was created');
});

server.run();

const unreachable = suite('a start that cannot reach its PostgreSQL server');
unreachable.after.each(() => killAll());
unreachable('a closed port: one line that names the server and asks whether it runs there, exit 1', async () => {
  const port = await closedPort();
  const db = `postgres://inventory@127.0.0.1:${port}/inventory`;
  const failed = spawnService({ INVENTORY_DB: db });
  const { code } = await withTimeout(failed.exited, WAIT_MS, 'the service to give up');
  assert.is(code, 1, `exit ${code}\nstderr: ${failed.err()}`);
  assert.is(
    failed.err(),
    `petstore-inventory: cannot use the database ${db}: the database server refused the connection (is it running on that host and port?)\n`,
  );
});
unreachable.run();
