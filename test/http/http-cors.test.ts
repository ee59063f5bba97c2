// CORS as a browser meets it, over HTTP against a listening server: real preflights
// (OPTIONS with Origin and Access-Control-Request-Method/-Headers), then the actual
// requests, errors included, from an allowed origin, another origin, and with CORS off.
import * as assert from 'uvu/assert';
import { readConfig } from '../../src/config.ts';
import { suite } from 'uvu';
import { ERROR_CODES } from '../../src/http/stages/errors.ts';
import type { TestApp } from '../kit/app.ts';
import { assertErrorShape, rawAnswer, sendRaw, type Response } from '../kit/http.ts';
import { appSuite } from '../kit/suites.ts';

const SHOP = 'https://shop.example.com';
const LOCAL = 'http://localhost:3000';
const EVIL = 'https://evil.example';

function preflight(t: TestApp, origin: string, path = '/v1/inventory/7', method = 'PATCH'): Promise<Response> {
  return t.request({
    method: 'OPTIONS',
    path,
    headers: {
      Origin: origin,
      'Access-Control-Request-Method': method,
      'Access-Control-Request-Headers': 'authorization,content-type,if-match,if-none-match,x-request-id,idempotency-key',
    },
  });
}

const list = (value: string | string[] | number | undefined) =>
  String(value ?? '')
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter((s) => s !== '');

function assertCors(res: Response, origin: string, label: string): void {
  assert.is(res.headers['access-control-allow-origin'], origin, `${label}: Allow-Origin is the origin itself`);
  assert.ok(list(res.headers.vary).includes('origin'), `${label}: Vary: Origin (${String(res.headers.vary)})`);
  assert.equal(
    list(res.headers['access-control-expose-headers']).sort(),
    ['etag', 'idempotent-replayed', 'link', 'log-receipt', 'x-request-id'],
    `${label}: exposed headers`,
  );
  assert.is(res.headers['access-control-allow-credentials'], undefined, `${label}: no credentials mode`);
}

function assertNoCors(res: Response, label: string): void {
  for (const name of Object.keys(res.headers)) assert.not.ok(name.startsWith('access-control-'), `${label}: no ${name}`);
}

const allowed = appSuite('CORS: an allowed origin', { given: (t) => t.track(7, 3), app: { corsOrigins: [SHOP, LOCAL] } });

allowed('a preflight is answered 204 without a key, strictly', async ({ t }) => {
  for (const origin of [SHOP, LOCAL]) {
    const res = await preflight(t, origin);
    assert.is(res.status, 204, `${origin}: ${res.text}`);
    assert.is(res.text, '');
    assert.is(res.headers['access-control-allow-origin'], origin);
    assert.ok(list(res.headers.vary).includes('origin'));
    assert.equal(list(res.headers['access-control-allow-methods']).sort(), ['get', 'head', 'patch']);
    assert.equal(list(res.headers['access-control-allow-headers']).sort(), [
      'authorization',
      'content-type',
      'idempotency-key',
      'if-match',
      'if-none-match',
      'last-event-id',
      'x-request-id',
    ]);
    assert.is(res.headers['access-control-allow-credentials'], undefined);
    assert.ok(res.headers['x-request-id'], 'the request id is echoed');
  }
  const forList = await preflight(t, SHOP, '/v1/inventory', 'GET');
  assert.is(forList.status, 204);
});

allowed('a preflight on a path that does not exist is answered as the path is: 404, no CORS grants', async ({ t }) => {
  for (const [path, method] of [
    ['/v1/nope', 'GET'],
    ['/v1/inventory/7/extra', 'PATCH'],
    ['/v2/inventory', 'GET'],
    ['/nope', 'GET'],
    ['/V1/Inventory', 'GET'],
  ] as const) {
    const res = await preflight(t, SHOP, path, method);
    assertErrorShape(res, 404, 'not_found', `preflight on ${path}`);
    assertNoCors(res, `preflight on ${path}`);
  }
  for (const path of ['/v1/inventory/7', '/v1/inventory', '/healthz', '/docs']) {
    const res = await preflight(t, SHOP, path, 'GET');
    assert.is(res.status, 204, `${path} exists: ${res.text}`);
    assert.is(res.headers['access-control-allow-origin'], SHOP, path);
  }
});

allowed('the actual requests carry the CORS headers: 200, 304, and the errors a browser must read', async ({ t }) => {
  const auth = { Authorization: `Bearer ${t.key}`, Origin: SHOP };
  const ok = await t.request({ path: '/v1/inventory', headers: auth });
  assert.is(ok.status, 200);
  assertCors(ok, SHOP, '200');
  const notModified = await t.request({ path: '/v1/inventory', headers: { ...auth, 'If-None-Match': String(ok.headers.etag) } });
  assert.is(notModified.status, 304);
  assert.is(notModified.headers['access-control-allow-origin'], SHOP, '304');

  const patch = (headers: Record<string, string>) =>
    t.request({
      method: 'PATCH',
      path: '/v1/inventory/7',
      headers: { 'Content-Type': 'application/json', ...headers },
      body: '{"quantity":4}',
    });
  const written = await patch({ ...auth, 'If-Match': '"1"' });
  assert.is(written.status, 200);
  assertCors(written, SHOP, 'PATCH 200');

  const cases: [string, Response, number][] = [
    ['no key', await t.request({ path: '/v1/inventory', headers: { Origin: SHOP } }), 401],
    ['stale If-Match', await patch({ ...auth, 'If-Match': '"1"' }), 412],
    ['unknown path', await t.request({ path: '/v1/nope', headers: auth }), 404],
    ['wrong method', await t.request({ method: 'DELETE', path: '/v1/inventory', headers: auth }), 405],
    ['bad body', await patch({ ...auth, 'Content-Type': 'text/plain' }), 415],
    [
      'untracked pet',
      await t.request({
        method: 'PATCH',
        path: '/v1/inventory/99',
        headers: { ...auth, 'Content-Type': 'application/json' },
        body: '{"quantity":4}',
      }),
      404,
    ],
  ];
  for (const [label, res, status] of cases) {
    assertErrorShape(res, status, ERROR_CODES, label);
    assertCors(res, SHOP, label);
  }
  assert.is(cases[1]![1].headers.etag, '"2"', 'the 412 carries the current ETag, which the browser may read');
});

allowed('anything but a preflight still needs a key, a plain OPTIONS included', async ({ t }) => {
  const plain = await t.request({ method: 'OPTIONS', path: '/v1/inventory', headers: { Origin: SHOP } });
  assert.is(plain.status, 401);
  const patch = await t.request({
    method: 'PATCH',
    path: '/v1/inventory/7',
    headers: { Origin: SHOP, 'Content-Type': 'application/json' },
    body: '{"quantity":1}',
  });
  assert.is(patch.status, 401);
  assert.is((await t.events()).length, 1, 'nothing written');
});

allowed('another origin gets no CORS headers: its preflight is a request without a key', async ({ t }) => {
  for (const origin of [EVIL, `${SHOP}.evil.example`, 'https://SHOP.example.com', `${SHOP}/`, 'null', 'http://shop.example.com']) {
    const res = await preflight(t, origin);
    assert.is(res.status, 401, origin);
    assertNoCors(res, origin);
    const get = await t.request({ path: '/v1/inventory', headers: { Authorization: `Bearer ${t.key}`, Origin: origin } });
    assert.is(get.status, 200, origin);
    assertNoCors(get, origin);
  }
});

allowed('every answer says Vary: Origin: preflights on no path, requests without Origin, a bad Host', async ({ t }) => {
  const varies = (res: Pick<Response, 'headers'>, label: string) =>
    assert.ok(list(res.headers.vary).includes('origin'), `${label}: Vary: Origin (${String(res.headers.vary)})`);
  for (const path of ['/v1/nope', '/nope', '/v1/inventory/7/extra']) {
    for (const origin of [SHOP, EVIL]) varies(await preflight(t, origin, path, 'GET'), `preflight from ${origin} on ${path}`);
  }
  const key = { Authorization: `Bearer ${t.key}` };
  for (const [label, res] of [
    ['GET without Origin', await t.request({ path: '/v1/inventory', headers: key })],
    ['401 without Origin', await t.request({ path: '/v1/inventory' })],
    ['404 without Origin', await t.request({ path: '/nope' })],
    ['/healthz', await t.request({ path: '/healthz' })],
    ['405', await t.request({ method: 'DELETE', path: '/v1/inventory', headers: { ...key, Origin: SHOP } })],
  ] as const) {
    varies(res, label);
  }
  const twoHosts = await sendRaw(t.port, `GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\nOrigin: ${SHOP}\r\n\r\n`);
  const answer = rawAnswer(twoHosts);
  assertErrorShape(answer, 400, 'bad_request', 'two Host lines');
  varies(answer, 'a bad Host');
});

allowed.run();

const off = appSuite('CORS: off by default', { given: (t) => t.track(7, 3) });

off('no origin is allowed: no CORS headers, preflights need a key', async ({ t }) => {
  const res = await preflight(t, SHOP);
  assert.is(res.status, 401);
  assertNoCors(res, 'preflight');
  const get = await t.request({ path: '/v1/inventory', headers: { Authorization: `Bearer ${t.key}`, Origin: SHOP } });
  assert.is(get.status, 200);
  assertNoCors(get, 'GET');
});

off.run();

const config = suite('CORS_ORIGINS in the configuration');

config('unset or empty: none; a list of exact origins, spaces around commas allowed', () => {
  assert.equal(readConfig({}).corsOrigins, []);
  assert.equal(readConfig({ CORS_ORIGINS: '' }).corsOrigins, []);
  assert.equal(readConfig({ CORS_ORIGINS: `${SHOP}, ${LOCAL}` }).corsOrigins, [SHOP, LOCAL]);
  assert.equal(readConfig({ CORS_ORIGINS: 'http://[::1]:8081' }).corsOrigins, ['http://[::1]:8081']);
});

config('anything that is not an origin as browsers send it is refused with a clear message', () => {
  const cases: [string, RegExp][] = [
    ['*', /wildcard/],
    ['https://*.example.com', /wildcard/],
    [`${SHOP}/`, /"https:\/\/shop\.example\.com".*no trailing slash/],
    [`${SHOP}/app`, /no path/],
    ['https://Shop.Example.com', /lower-case host/],
    ['https://shop.example.com:443', /no default port/],
    ['shop.example.com', /not an origin|not http/],
    ['null', /not an origin/],
    ['ftp://files.example.com', /not http or https/],
    [`${SHOP},,${LOCAL}`, /empty/],
  ];
  for (const [value, message] of cases) {
    assert.throws(
      () => readConfig({ CORS_ORIGINS: value }),
      (err: Error) => err.name === 'ConfigError' && /^CORS_ORIGINS must be/.test(err.message) && message.test(err.message),
      value,
    );
  }
});

config.run();
