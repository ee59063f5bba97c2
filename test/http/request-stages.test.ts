// Every request takes the same stages before the router: a stage added to them is on every
// route (the list from memory included) and on the answers no route gives (404, 405,
// OPTIONS), with and without CORS; every answer has its request id, its access log line
// and its metrics, labelled by the template of the routes serving its path. GET /v1/inventory answers from memory
// as it did before Koa when that was a door of its own (the same status, headers, body),
// a change shows at once, a body Node's parser refuses is a 400 logged and counted as
// such, and a store whose synchronous check throws is a 503 from the error boundary.
import { Writable } from 'node:stream';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import * as assert from 'uvu/assert';
import type { Middleware } from 'koa';
import { buildApp } from '../../src/app.ts';
import { createHttpServer } from '../../src/http/server/node-server.ts';
import { createLogger } from '../../src/support/logger.ts';
import { StoreUnavailable } from '../../src/store/health.ts';
import type { InventoryStore } from '../../src/store/port.ts';
import { assertErrorShape, rawAnswer, send, sendRaw, type AccessLogLine, type RequestOptions, type Response } from '../kit/http.ts';
import { sample } from '../kit/prometheus.ts';
import { appSuite } from '../kit/suites.ts';
import type { TestApp } from '../kit/app.ts';

interface Served {
  port: number;
  lines: string[];
  /** The paths the test stage saw, one per request, in order. */
  staged: string[];
  ask(options: RequestOptions): Promise<Response>;
  /** The access log lines written so far, waiting (a bounded while) for `count`. */
  logged(count: number): Promise<AccessLogLine[]>;
  close(): Promise<void>;
}

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

/** An app on t's store with a test stage of its own, served on a port of its own. */
async function serve(t: TestApp, corsOrigins: string[] = [], store: InventoryStore = t.store): Promise<Served> {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk));
      done();
    },
  });
  const staged: string[] = [];
  const stage: Middleware = (ctx, next) => {
    staged.push(ctx.path);
    ctx.set('X-Test-Stage', 'ran');
    return next();
  };
  const app = buildApp({ store, logger: createLogger('info', sink), corsOrigins, stages: [stage] });
  const server = createHttpServer(app);
  const port = await listen(server);
  const access = () => lines.map((line) => JSON.parse(line) as AccessLogLine & { msg?: string }).filter((l) => 'durationMs' in l);
  return {
    port,
    lines,
    staged,
    ask: (options) => send(port, options),
    async logged(count) {
      for (let i = 0; i < 100 && access().length < count; i++) await new Promise((r) => setTimeout(r, 10));
      return access();
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

async function withServed(t: TestApp, test: (s: Served) => Promise<void>, corsOrigins: string[] = [], store?: InventoryStore) {
  const served = await serve(t, corsOrigins, store);
  try {
    await test(served);
  } finally {
    await served.close();
  }
}

const count = async (s: Served, labels: string) =>
  sample((await s.ask({ path: '/metrics' })).text, 'inventory_http_request_duration_seconds_count', labels) ?? 0;

const stages = appSuite('the same stages for every request', {
  given: async (t) => {
    await t.track(1, 5);
    await t.track(9007199254740993n, 7);
  },
});

const ORIGIN = 'https://shop.example';

for (const cors of [false, true]) {
  stages(`a stage added to the table is on every route and every other answer ${cors ? 'with' : 'without'} CORS`, async ({ t }) =>
    withServed(
      t,
      async (s) => {
        const auth = { Authorization: `Bearer ${t.key}`, ...(cors ? { Origin: ORIGIN } : {}) };
        // The list is asked twice: the second answer comes from memory.
        const requests: [RequestOptions, number, string | undefined][] = [
          [{ path: '/healthz' }, 200, '/healthz'],
          [{ path: '/readyz' }, 200, '/readyz'],
          [{ path: '/openapi.json' }, 200, '/openapi.json'],
          [{ path: '/docs' }, 200, '/docs'],
          [{ path: '/v1/inventory' }, 200, '/v1/inventory'],
          [{ path: '/v1/inventory' }, 200, '/v1/inventory'],
          [{ path: '/v1/inventory/1' }, 200, '/v1/inventory/:petId'],
          [
            { method: 'PATCH', path: '/v1/inventory/1', headers: { 'Content-Type': 'application/json' }, body: '{"quantity":6}' },
            200,
            '/v1/inventory/:petId',
          ],
          [{ path: '/v1/log/head' }, 200, '/v1/log/head'],
          [{ path: '/v1/log/signing-keys' }, 200, '/v1/log/signing-keys'],
          [{ path: '/v1/events' }, 200, '/v1/events'],
          [{ method: 'DELETE', path: '/v1/inventory' }, 405, '/v1/inventory'],
          [{ method: 'OPTIONS', path: '/v1/inventory/1' }, 204, '/v1/inventory/:petId'],
          [{ path: '/v1/nothing' }, 404, undefined],
          [{ path: '/nothing' }, 404, undefined],
        ];
        const labelsOf = ([options, status, template]: (typeof requests)[number]) =>
          `method="${options.method ?? 'GET'}",route="${template ?? 'unmatched'}",status="${status}"`;
        const expected = new Map<string, number>();
        for (const request of requests) expected.set(labelsOf(request), (expected.get(labelsOf(request)) ?? 0) + 1);
        const before = new Map<string, number>();
        for (const labels of expected.keys()) before.set(labels, await count(s, labels));
        s.staged.length = 0;
        s.lines.length = 0;
        const answers: Response[] = [];
        for (const [options, status] of requests) {
          const res = await s.ask({ ...options, headers: { ...auth, ...options.headers } });
          const label = `${options.method ?? 'GET'} ${options.path}`;
          answers.push(res);
          assert.is(res.status, status, `${label}: ${res.text.slice(0, 200)}`);
          assert.is(res.headers['x-test-stage'], 'ran', `${label}: the stage ran`);
          assert.match(String(res.headers['x-request-id']), /^[A-Za-z0-9._:-]{1,128}$/, `${label}: a request id`);
          if (cors) {
            assert.match(String(res.headers.vary), /Origin/, `${label}: CORS`);
            // An OPTIONS without Access-Control-Request-Method is no preflight: it grants nothing.
            if (options.method !== 'OPTIONS') assert.is(res.headers['access-control-allow-origin'], ORIGIN, `${label}: CORS`);
          } else assert.is(res.headers['access-control-allow-origin'], undefined, `${label}: no CORS`);
        }
        assert.equal(
          s.staged,
          requests.map(([options]) => options.path),
          'the stage ran once for each request',
        );
        // Each request's access line, with its request id and status, in order.
        const lines = (await s.logged(requests.length)).slice(0, requests.length);
        assert.equal(
          lines.map((l) => [l.method, l.path, l.status, l.requestId]),
          requests.map(([options, status], i) => [options.method ?? 'GET', options.path, status, answers[i]!.headers['x-request-id']]),
        );
        // And its metrics, labelled by its match.
        for (const [labels, n] of expected) assert.is((await count(s, labels)) - before.get(labels)!, n, labels);
      },
      cors ? [ORIGIN] : [],
    ),
  );
}

stages('the list from memory: answered as before, with the request id given or a new one', async ({ t }) =>
  withServed(t, async (s) => {
    const auth = { Authorization: `Bearer ${t.key}` };
    const hits = async () => sample((await s.ask({ path: '/metrics' })).text, 'inventory_list_cache_hits_total') ?? 0;
    const renders = async () => sample((await s.ask({ path: '/metrics' })).text, 'inventory_list_renders_total') ?? 0;
    const first = await s.ask({ path: '/v1/inventory', headers: auth });
    const [hitsBefore, rendersBefore] = [await hits(), await renders()];
    const held = await s.ask({ path: '/v1/inventory', headers: { ...auth, 'X-Request-Id': 'trace-42' } });
    assert.is((await renders()) - rendersBefore, 0, 'not rendered again');
    assert.is((await hits()) - hitsBefore, 1, 'one answer without a render');
    for (const res of [first, held]) {
      assert.is(res.status, 200);
      assert.equal(
        Object.keys(res.headers)
          .filter((h) => !['date', 'connection', 'keep-alive'].includes(h))
          .sort(),
        ['cache-control', 'content-length', 'content-type', 'etag', 'x-request-id', 'x-test-stage'],
      );
      assert.is(res.headers['cache-control'], 'private, no-cache');
      assert.is(res.headers['content-type'], 'application/json; charset=utf-8');
      assert.is(res.text, '[{"petId":1,"quantity":5,"status":"available"},{"petId":9007199254740993,"quantity":7,"status":"available"}]');
    }
    assert.is(held.headers.etag, first.headers.etag);
    assert.is(held.headers['x-request-id'], 'trace-42');
    const refused = await s.ask({ path: '/v1/inventory', headers: { ...auth, 'X-Request-Id': 'not a token' } });
    assert.is(refused.status, 200);
    assert.is.not(refused.headers['x-request-id'], 'not a token');
    const line = (await s.logged(3)).find((l) => l.requestId === 'trace-42');
    assert.equal(
      [line?.actor, line?.method, line?.path, line?.status, typeof line?.durationMs],
      ['tester', 'GET', '/v1/inventory', 200, 'number'],
    );
  }),
);

stages('a change is shown at once: the list held is not current, and is rendered again', async ({ t }) =>
  withServed(t, async (s) => {
    const auth = { Authorization: `Bearer ${t.key}` };
    await s.ask({ path: '/v1/inventory', headers: auth });
    const before = await s.ask({ path: '/v1/inventory', headers: auth });
    assert.is((await t.patch(1, { quantity: 42 })).status, 200);
    const after = await s.ask({ path: '/v1/inventory', headers: auth });
    assert.ok(after.text.includes('{"petId":1,"quantity":42,"status":"available"}'), after.text);
    assert.is.not(after.headers.etag, before.headers.etag);
  }),
);

stages('with CORS the list says Vary: Origin and grants the allowed origin', async ({ t }) =>
  withServed(
    t,
    async (s) => {
      const auth = { Authorization: `Bearer ${t.key}` };
      for (let i = 0; i < 2; i++) {
        const res = await s.ask({ path: '/v1/inventory', headers: { ...auth, Origin: ORIGIN } });
        assert.is(res.status, 200);
        assert.match(String(res.headers.vary), /Origin/);
        assert.is(res.headers['access-control-allow-origin'], ORIGIN);
      }
      const other = await s.ask({ path: '/v1/inventory', headers: { ...auth, Origin: 'https://elsewhere.example' } });
      assert.is(other.status, 200);
      assert.is(other.headers['access-control-allow-origin'], undefined);
    },
    [ORIGIN],
  ),
);

stages('a body Node’s parser refuses (Transfer-Encoding: xchunked) is a 400, logged and counted as 400', async ({ t }) =>
  withServed(t, async (s) => {
    const auth = `Authorization: Bearer ${t.key}\r\n`;
    // The list is held: a plain GET would be answered from memory at once.
    await s.ask({ path: '/v1/inventory', headers: { Authorization: `Bearer ${t.key}` } });
    const labels = (status: string) => `method="GET",route="/v1/inventory",status="${status}"`;
    const requests: [string, string][] = [
      ['an unknown Transfer-Encoding', 'Transfer-Encoding: xchunked\r\n\r\n'],
      ['a chunk that is not one', 'Transfer-Encoding: chunked\r\n\r\nzz\r\n'],
    ];
    for (const [label, rest] of requests) {
      const [ok, refused] = [await count(s, labels('200')), await count(s, labels('400'))];
      s.lines.length = 0;
      const answer = rawAnswer(await sendRaw(s.port, `GET /v1/inventory HTTP/1.1\r\nHost: x\r\n${auth}${rest}`));
      assertErrorShape(answer, 400, 'bad_request', label);
      assert.is(answer.headers.connection, 'close', label);
      const logged = (await s.logged(1)).filter((l) => l.path === '/v1/inventory');
      assert.equal(
        logged.map((l) => [l.status, l.requestId]),
        [[400, answer.headers['x-request-id']]],
        `${label}: the access log says what the client got\n${s.lines.join('')}`,
      );
      assert.is((await count(s, labels('200'))) - ok, 0, `${label}: no 200 counted`);
      assert.is((await count(s, labels('400'))) - refused, 1, `${label}: its 400 counted`);
    }
  }),
);

stages('a store whose synchronous check throws: the error boundary answers 503 and the process goes on', async ({ t }) => {
  let failing = false;
  const fault = () => new StoreUnavailable('the connection failed');
  // The store's connection fails between two requests: its synchronous check throws and
  // its asynchronous one rejects alike.
  const store: InventoryStore = {
    ...t.store,
    changeTokenNow: () => {
      if (failing) throw fault();
      return t.store.changeTokenNow?.();
    },
    changeToken: () => (failing ? Promise.reject(fault()) : t.store.changeToken()),
  };
  const escaped: Error[] = [];
  const onUncaught = (err: Error) => escaped.push(err);
  process.on('uncaughtException', onUncaught);
  try {
    await withServed(
      t,
      async (s) => {
        const auth = { Authorization: `Bearer ${t.key}` };
        await s.ask({ path: '/v1/inventory', headers: auth });
        assert.is((await s.ask({ path: '/v1/inventory', headers: auth })).status, 200);
        failing = true;
        const res = await s.ask({ path: '/v1/inventory', headers: auth });
        assertErrorShape(res, 503, 'unavailable');
        assert.is(res.headers['retry-after'], '1');
        assert.equal(escaped, [], 'nothing escaped the request listener');
        failing = false;
        assert.is((await s.ask({ path: '/healthz' })).status, 200, 'still serving');
      },
      [],
      store,
    );
  } finally {
    process.off('uncaughtException', onUncaught);
  }
});

stages.run();
