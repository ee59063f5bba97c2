// GET /v1/inventory answered before Koa (src/http/shortcut.ts) gives the answer Koa's road
// gives: the same requests are sent to a server with the shortcut and to one without it
// (one app, one store), and their status, headers and body compared; the shortcut is
// seen to answer the plain request and to leave every other one to Koa; its access log
// line and request metrics are Koa's.
import { Writable } from 'node:stream';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import * as assert from 'uvu/assert';
import { buildApp, type ServiceApp } from '../src/app.ts';
import { createHttpServer } from '../src/http/node-server.ts';
import { createLogger } from '../src/logger.ts';
import { StoreUnavailable } from '../src/store/health.ts';
import type { InventoryStore } from '../src/store/port.ts';
import { assertErrorShape, rawAnswer, send, sendRaw, type AccessLogLine, type Response } from './kit/http.ts';
import { sample } from './kit/prometheus.ts';
import { appSuite } from './kit/suites.ts';
import type { TestApp } from './kit/app.ts';

interface Both {
  app: ServiceApp;
  ports: { fast: number; koa: number };
  /** What the shortcut decided for each request it saw: true when it answered. */
  taken: boolean[];
  lines: string[];
  /** Answers through the shortcut's server, then through Koa's. */
  ask(path: string, headers?: Record<string, string>): Promise<[Response, Response]>;
  close(): Promise<void>;
}

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

/** One app on t's store, served twice: with its shortcut (watched), and without. */
async function serveBoth(t: TestApp, corsOrigins: string[] = [], store: InventoryStore = t.store): Promise<Both> {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk));
      done();
    },
  });
  const app = buildApp({ store, logger: createLogger('info', sink), corsOrigins });
  const taken: boolean[] = [];
  const shortcut = app.shortcut;
  if (shortcut)
    app.shortcut = (req, res) => {
      const answered = shortcut(req, res);
      taken.push(answered);
      return answered;
    };
  const fast = createHttpServer(app);
  app.shortcut = undefined;
  const koa = createHttpServer(app);
  app.shortcut = shortcut;
  const [fastPort, koaPort] = [await listen(fast), await listen(koa)];
  return {
    app,
    ports: { fast: fastPort, koa: koaPort },
    taken,
    lines,
    async ask(path, headers = {}) {
      const viaShortcut = await send(fastPort, { path, headers });
      return [viaShortcut, await send(koaPort, { path, headers })];
    },
    async close() {
      await Promise.all([fast, koa].map((s) => new Promise((resolve) => s.close(resolve))));
    },
  };
}

/** Runs test on both servers of t's app (serveBoth), closing them whatever happens. */
async function withBoth(
  t: TestApp,
  test: (both: Both) => Promise<void>,
  corsOrigins: string[] = [],
  store: InventoryStore = t.store,
): Promise<void> {
  const both = await serveBoth(t, corsOrigins, store);
  try {
    await test(both);
  } finally {
    await both.close();
  }
}

/**
 * Asks until the shortcut answers (at most 20 times): it answers only while the store can
 * tell at once that the key and the list are current (on PostgreSQL, while its
 * notifications prove so), which a loaded machine can interrupt for a moment.
 */
async function askShortcut(both: Both, path: string, headers: Record<string, string>): Promise<[Response, Response]> {
  for (let i = 0; ; i++) {
    both.lines.length = 0;
    const answers = await both.ask(path, headers);
    if (both.taken.at(-1) === true || i === 19) return answers;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** The headers that must agree: all but the date and, unless the client gave one, the request id. */
function comparable(res: Response, keepRequestId: boolean): Record<string, unknown> {
  const rest: Record<string, unknown> = { ...res.headers };
  delete rest.date;
  if (!keepRequestId) delete rest['x-request-id'];
  return rest;
}

function assertSame([viaShortcut, viaKoa]: [Response, Response], label: string, keepRequestId = false): void {
  assert.is(viaShortcut.status, viaKoa.status, `${label}: status`);
  assert.equal(comparable(viaShortcut, keepRequestId), comparable(viaKoa, keepRequestId), `${label}: headers`);
  assert.is(viaShortcut.text, viaKoa.text, `${label}: body`);
  assert.match(String(viaShortcut.headers['x-request-id']), /^[A-Za-z0-9._:-]{1,128}$/, `${label}: a request id`);
}

const shortcut = appSuite('GET /v1/inventory before Koa', {
  given: async (t) => {
    await t.track(1, 5);
    await t.track(9007199254740993n, 7);
  },
});

shortcut('the plain request: answered by the shortcut, as Koa answers it', async ({ t }) =>
  withBoth(t, async (both) => {
    const auth = { Authorization: `Bearer ${t.key}` };
    // The first request renders the list (Koa's road); from then on it is held.
    assertSame(await both.ask('/v1/inventory', auth), 'first');
    assertSame(await askShortcut(both, '/v1/inventory', auth), 'held');
    assert.is(both.taken.at(-1), true, 'the shortcut answered the plain request');
    assertSame(await askShortcut(both, '/v1/inventory', { ...auth, 'X-Request-Id': 'trace-42' }), 'a request id given', true);
    assert.is(both.taken.at(-1), true);
    const bad = await askShortcut(both, '/v1/inventory', { ...auth, 'X-Request-Id': 'not a token' });
    assertSame(bad, 'a request id refused');
    assert.is.not(bad[0].headers['x-request-id'], 'not a token');
    assert.is(bad[0].json<unknown[]>().length, 2);
  }),
);

shortcut('a change is shown at once: a list not known current goes to Koa, which renders it', async ({ t }) =>
  withBoth(t, async (both) => {
    const auth = { Authorization: `Bearer ${t.key}` };
    await both.ask('/v1/inventory', auth);
    const before = (await both.ask('/v1/inventory', auth))[0];
    assert.is((await t.patch(1, { quantity: 42 })).status, 200);
    const after = await both.ask('/v1/inventory', auth);
    assertSame(after, 'after a PATCH');
    assert.ok(after[0].text.includes('{"petId":1,"quantity":42,"status":"available"}'), after[0].text);
    assert.is.not(after[0].headers.etag, before.headers.etag);
  }),
);

shortcut('every other request is left to Koa and answered as before', async ({ t }) =>
  withBoth(t, async (both) => {
    const auth = { Authorization: `Bearer ${t.key}` };
    const held = (await both.ask('/v1/inventory', auth))[0];
    const etag = String(held.headers.etag);
    const others: [string, string, Record<string, string>][] = [
      ['no key', '/v1/inventory', {}],
      ['an unknown key', '/v1/inventory', { Authorization: 'Bearer not-a-key' }],
      ['another scheme', '/v1/inventory', { Authorization: `Basic ${t.key}` }],
      ['If-None-Match', '/v1/inventory', { ...auth, 'If-None-Match': etag }],
      ['If-Match that fails', '/v1/inventory', { ...auth, 'If-Match': '"other"' }],
      ['a query', '/v1/inventory?x=1', auth],
      ['another path', '/v1/inventory/1', auth],
    ];
    for (const [label, path, headers] of others) {
      both.taken.length = 0;
      const answers = await both.ask(path, headers);
      assertSame(answers, label);
      assert.equal(both.taken, [false], `${label}: left to Koa`);
    }
  }),
);

shortcut('its access log line and request metrics are those of Koa’s road', async ({ t }) =>
  withBoth(t, async (both) => {
    const auth = { Authorization: `Bearer ${t.key}` };
    await both.ask('/v1/inventory', auth);
    // The one registry both servers record in, read through Koa's server.
    const count = async () =>
      sample(
        (await both.ask('/metrics'))[1].text,
        'inventory_http_request_duration_seconds_count',
        'method="GET",route="/v1/inventory",status="200"',
      ) ?? 0;
    const before = await count();
    const mark = both.taken.length;
    const [viaShortcut] = await askShortcut(both, '/v1/inventory', auth);
    const tries = both.taken.length - mark;
    assert.is(both.taken.at(-1), true);
    // Lines are written once the response closes.
    for (let i = 0; i < 50 && both.lines.length < 2; i++) await new Promise((r) => setTimeout(r, 10));
    const [fast, koa] = both.lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    assert.is(fast!.requestId, viaShortcut.headers['x-request-id']);
    for (const line of [fast!, koa!]) {
      assert.type(line.durationMs, 'number');
      delete line.durationMs;
      delete line.requestId;
      delete line.time;
    }
    assert.equal(fast, koa);
    assert.equal(
      Object.keys(fast!),
      ['level', 'actor', 'method', 'path', 'status', 'msg'].filter((k) => k in fast!),
    );
    // Each try is counted once on each server, whoever answered it.
    assert.is((await count()) - before, 2 * tries, 'one each way');
  }),
);

shortcut('with CORS the app has no shortcut: its answers depend on the Origin', async ({ t }) =>
  withBoth(
    t,
    async (both) => {
      assert.is(both.app.shortcut, undefined);
      const [res] = await both.ask('/v1/inventory', { Authorization: `Bearer ${t.key}` });
      assert.is(res.status, 200);
      assert.match(String(res.headers.vary), /Origin/);
    },
    ['https://shop.example'],
  ),
);

shortcut('a body Node’s parser refuses (Transfer-Encoding: xchunked) is 400 both ways, logged and counted as 400', async ({ t }) =>
  withBoth(t, async (both) => {
    const auth = `Authorization: Bearer ${t.key}\r\n`;
    await askShortcut(both, '/v1/inventory', { Authorization: `Bearer ${t.key}` });
    assert.is(both.taken.at(-1), true, 'the list is held: the shortcut would answer a plain request');
    const count = async (status: string) =>
      sample(
        (await both.ask('/metrics'))[1].text,
        'inventory_http_request_duration_seconds_count',
        `method="GET",route="/v1/inventory",status="${status}"`,
      ) ?? 0;
    const requests: [string, string][] = [
      ['an unknown Transfer-Encoding', 'Transfer-Encoding: xchunked\r\n\r\n'],
      ['a chunk that is not one', 'Transfer-Encoding: chunked\r\n\r\nzz\r\n'],
    ];
    for (const [label, rest] of requests) {
      const [ok, refused] = [await count('200'), await count('400')];
      both.lines.length = 0;
      const text = `GET /v1/inventory HTTP/1.1\r\nHost: x\r\n${auth}${rest}`;
      const answers = [rawAnswer(await sendRaw(both.ports.fast, text)), rawAnswer(await sendRaw(both.ports.koa, text))];
      for (const [i, way] of ['shortcut', 'Koa'].entries()) {
        assertErrorShape(answers[i]!, 400, 'bad_request', `${label} (${way})`);
        assert.is(answers[i]!.headers.connection, 'close', `${label} (${way})`);
      }
      for (let i = 0; i < 50 && both.lines.length < 2; i++) await new Promise((r) => setTimeout(r, 10));
      const logged = both.lines.map((line) => JSON.parse(line) as AccessLogLine).filter((l) => l.path === '/v1/inventory');
      assert.equal(
        logged.map((l) => [l.status, l.requestId]),
        answers.map((a) => [400, a.headers['x-request-id']]),
        `${label}: the access log says what the clients got\n${both.lines.join('')}`,
      );
      assert.is((await count('200')) - ok, 0, `${label}: no 200 counted`);
      assert.is((await count('400')) - refused, 2, `${label}: a 400 counted each way`);
    }
  }),
);

shortcut('a store whose check throws: the shortcut gives Koa’s answer (503) and the process goes on', async ({ t }) => {
  let failing = false;
  const fault = () => new StoreUnavailable('the connection failed');
  // The store's connection fails between two requests: its synchronous check throws and
  // its asynchronous one rejects alike.
  const store: InventoryStore = {
    ...t.store,
    changeTokenNow: () => {
      if (failing) throw fault();
      return t.store.changeTokenNow();
    },
    changeToken: () => (failing ? Promise.reject(fault()) : t.store.changeToken()),
  };
  const escaped: Error[] = [];
  const onUncaught = (err: Error) => escaped.push(err);
  process.on('uncaughtException', onUncaught);
  try {
    await withBoth(
      t,
      async (both) => {
        const auth = { Authorization: `Bearer ${t.key}` };
        await askShortcut(both, '/v1/inventory', auth);
        assert.is(both.taken.at(-1), true, 'the shortcut answers while the store can tell');
        failing = true;
        const answers = await both.ask('/v1/inventory', auth);
        assertSame(answers, 'a failing check');
        assertErrorShape(answers[0], 503, 'unavailable');
        assert.equal(escaped, [], 'nothing escaped the request listener');
        failing = false;
        assert.is((await both.ask('/healthz'))[0].status, 200, 'still serving');
      },
      [],
      store,
    );
  } finally {
    process.off('uncaughtException', onUncaught);
  }
});

shortcut.run();
