// The OpenAPI document tells the truth about the running service: real requests, one per
// kind of answer, are checked against what the document says of that operation (status
// listed, headers declared and marked required exactly when the service always sends
// them, Error bodies valid), and its servers and request-header schemas are usable.
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { assertErrorShape, type Response } from './kit/http.ts';
import { appSuite } from './kit/suites.ts';
import { DEFAULT_LIMITS } from '../src/http/node-server.ts';

// This test walks an arbitrary JSON document (any path, operation, response or header
// the document holds), so its values are untyped by nature; the assertions check them.
/* eslint-disable @typescript-eslint/no-explicit-any, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-call, @typescript-eslint/no-unsafe-argument, @typescript-eslint/no-unsafe-return */
type Obj = Record<string, any>;
const doc: Obj = JSON.parse(readFileSync(new URL('../src/openapi.json', import.meta.url), 'utf8'));
const ajv = new Ajv2020({ strict: false, allErrors: true });
ajv.addSchema(doc, 'openapi');
const deref = (o: Obj): Obj =>
  o.$ref
    ? deref(
        o.$ref
          .slice(2)
          .split('/')
          .reduce((a: Obj, k: string) => a[k], doc),
      )
    : o;

// Headers the service sends on some answers and always on those: where one is seen, the
// document must declare it on that response and mark it required.
const WATCHED = ['x-request-id', 'etag', 'www-authenticate', 'accept-patch', 'retry-after', 'allow'];

function operationOf(method: string, path: string): Obj {
  const p = path.split('?')[0]!;
  const item =
    p === '/v1/inventory' ? doc.paths['/inventory'] : p.startsWith('/v1/inventory/') ? doc.paths['/inventory/{petId}'] : doc.paths[p];
  const op = item?.[method.toLowerCase()];
  if (!op) throw new Error(`the document has no operation for ${method} ${path}`);
  return op;
}

// Request headers the service judges: where a test sends one, the operation must declare it.
const JUDGED = ['if-match', 'if-none-match', 'x-request-id'];

function conforms(
  method: string,
  path: string,
  res: Pick<Response, 'status' | 'headers' | 'text'>,
  sent: Record<string, string> = {},
): void {
  const op = operationOf(method, path);
  const what = `${op.operationId} ${res.status}`;
  const parameters = new Set(
    (op.parameters ?? [])
      .map(deref)
      .filter((p: Obj) => p.in === 'header')
      .map((p: Obj) => p.name.toLowerCase()),
  );
  for (const name of Object.keys(sent)
    .map((n) => n.toLowerCase())
    .filter((n) => JUDGED.includes(n))) {
    assert.ok(parameters.has(name), `${op.operationId}: the service judges ${name}, which the operation does not declare`);
  }
  const documented = op.responses[String(res.status)];
  assert.ok(documented, `${what}: the status is not listed on the operation`);
  conformsTo(what, deref(documented), res);
}

/** The answer matches one documented response: headers declared and required, Error body. */
function conformsTo(what: string, response: Obj, res: Pick<Response, 'status' | 'headers' | 'text'>): void {
  const declared = new Map(Object.entries(response.headers ?? {}).map(([name, h]) => [name.toLowerCase(), deref(h as Obj)]));
  for (const name of WATCHED.filter((n) => res.headers[n] !== undefined)) {
    assert.ok(declared.has(name), `${what}: sends ${name}, which the document does not declare`);
    assert.is(declared.get(name)!.required, true, `${what}: always sends ${name}, not marked required`);
  }
  for (const [name, header] of declared) {
    if (header.required) assert.ok(res.headers[name] !== undefined, `${what}: ${name} is required but not sent`);
    if (res.headers[name] !== undefined) {
      assert.ok(ajv.validate(header.schema, res.headers[name]), `${what}: ${name}: ${ajv.errorsText()}`);
    }
  }
  if (res.status >= 400) {
    assert.ok(ajv.validate({ $ref: 'openapi#/components/schemas/Error' }, JSON.parse(res.text)), `${what}: ${ajv.errorsText()}`);
  }
}

/** A raw request on a socket (for what node:http will not send), answered then closed. */
function raw(port: number, request: string, waitMs = 5_000): Promise<Pick<Response, 'status' | 'headers' | 'text'>> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let data = '';
    const timer = setTimeout(() => socket.destroy(new Error(`no answer within ${waitMs} ms`)), waitMs);
    socket.setEncoding('utf8').on('data', (c: string) => (data += c));
    socket.on('error', reject);
    socket.on('close', () => {
      clearTimeout(timer);
      const [head = '', text = ''] = data.split('\r\n\r\n');
      const [statusLine, ...lines] = head.split('\r\n');
      const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
      resolve({ status: Number(statusLine?.split(' ')[1]), headers, text });
    });
    socket.write(request);
  });
}

const live = appSuite('the document describes the answers the service gives', {
  app: { limits: { ...DEFAULT_LIMITS, headersTimeoutMs: 300, requestTimeoutMs: 600, checkIntervalMs: 100 } },
  given: (t) => t.track(7, 3),
});

live('listInventory: 200, 304 (weak, list, *), 401', async ({ t }) => {
  const ok = await t.get();
  conforms('GET', '/v1/inventory', ok);
  for (const inm of [ok.headers.etag as string, `W/${ok.headers.etag}`, `"other", ${ok.headers.etag}`, '*']) {
    const res = await t.get('/v1/inventory', { 'If-None-Match': inm });
    assert.is(res.status, 304, inm);
    conforms('GET', '/v1/inventory', res, { 'If-None-Match': inm });
  }
  conforms('GET', '/v1/inventory', await t.request({ path: '/v1/inventory' }));
  conforms('GET', '/v1/inventory', await t.request({ path: '/v1/inventory', headers: { Authorization: 'Bearer pinv_nope' } }));
});

live('listInventory: If-Match is judged too: 412 with the current ETag, before If-None-Match', async ({ t }) => {
  const current = (await t.get()).headers.etag as string;
  for (const ifMatch of ['"stale"', `W/${current}`, 'not-a-tag', '']) {
    for (const sent of [{ 'If-Match': ifMatch }, { 'If-Match': ifMatch, 'If-None-Match': current }] as Record<string, string>[]) {
      const res = await t.get('/v1/inventory', sent);
      assertErrorShape(res, 412, 'precondition_failed', JSON.stringify(sent));
      assert.is(res.headers.etag, current, 'the 412 carries the current ETag');
      conforms('GET', '/v1/inventory', res, sent);
    }
  }
  for (const ifMatch of [current, `"other", ${current}`, '*']) {
    const res = await t.get('/v1/inventory', { 'If-Match': ifMatch });
    assert.is(res.status, 200, ifMatch);
    conforms('GET', '/v1/inventory', res, { 'If-Match': ifMatch });
  }
});

live('getInventoryItem: 200, 304 (weak, list, *), HEAD, 400, 401, 404, 412, as documented', async ({ t }) => {
  const path = '/v1/inventory/7';
  const ok = await t.get(path);
  assert.is(ok.status, 200);
  conforms('GET', path, ok);
  for (const inm of ['"1"', 'W/"1"', '"9", "1"', '*']) {
    const res = await t.get(path, { 'If-None-Match': inm });
    assert.is(res.status, 304, inm);
    conforms('GET', path, res, { 'If-None-Match': inm });
  }
  const head = await t.request({ method: 'HEAD', path, headers: { Authorization: `Bearer ${t.key}` } });
  assert.is(head.status, 200);
  assert.is(head.headers.etag, '"1"');
  for (const [res, status] of [
    [await t.get('/v1/inventory/abc'), 400],
    [await t.request({ path }), 401],
    [await t.get('/v1/inventory/8'), 404],
    [await t.get(path, { 'If-Match': '"2"' }), 412],
  ] as const) {
    assert.is(res.status, status);
    conforms(
      'GET',
      status === 400 ? '/v1/inventory/abc' : status === 404 ? '/v1/inventory/8' : path,
      res,
      status === 412 ? { 'If-Match': '"2"' } : {},
    );
  }
});

live('getInventoryItem is marked as an extension of the interface, in a field and in its description', () => {
  const op = doc.paths['/inventory/{petId}'].get;
  assert.ok(op['x-extension'], 'x-extension is set');
  assert.match(op.description, /^Extension:/);
  for (const [docPath, item] of Object.entries(doc.paths as Obj)) {
    for (const [method, other] of Object.entries(item as Obj)) {
      if (other !== op && METHODS.includes(method))
        assert.not.ok((other as Obj)['x-extension'], `${method} ${docPath} is not an extension`);
    }
  }
});

live('updateInventory: 415 for any media type but application/json with charset=utf-8 at most once', async ({ t }) => {
  const refused = [
    'application/json; charset=utf-16',
    'application/json; charset=utf8',
    'application/json; charset=iso-8859-1',
    'application/json; foo=bar',
    'application/json; charset=utf-8; charset=utf-8',
    'application/json; charset=utf-8; foo=bar',
    'application/json; foo',
    'text/json',
  ];
  for (const type of refused) {
    const res = await t.patch(7, { quantity: 5 }, { 'Content-Type': type });
    assertErrorShape(res, 415, 'unsupported_media_type', type);
    conforms('PATCH', '/v1/inventory/7', res);
  }
  for (const type of ['application/json; charset=UTF-8', 'application/json;charset="utf-8"']) {
    const res = await t.patch(7, { quantity: 5 }, { 'Content-Type': type });
    assert.is(res.status, 200, type);
    conforms('PATCH', '/v1/inventory/7', res);
  }
  assert.is((await t.events()).length, 3, 'only the two accepted PATCHes were written');
});

live('updateInventory: a body that is not UTF-8 is 400 malformed_json; a malformed If-None-Match is 412', async ({ t }) => {
  const path = '/v1/inventory/7';
  const headers = { Authorization: `Bearer ${t.key}`, 'Content-Type': 'application/json' };
  // {"quantity":1} with a lone continuation byte inside the member name.
  const body = Buffer.from([0x7b, 0x22, 0x71, 0x80, 0x22, 0x3a, 0x31, 0x7d]);
  const notUtf8 = await t.request({ method: 'PATCH', path, headers, body });
  assertErrorShape(notUtf8, 400, 'malformed_json');
  conforms('PATCH', path, notUtf8);
  for (const inm of ['not-a-tag', '', '"1" "2"']) {
    const res = await t.patch(7, { quantity: 5 }, { 'If-None-Match': inm });
    assert.is(res.status, 412, JSON.stringify(inm));
    assert.is(res.headers.etag, '"1"', 'the 412 carries the current version');
    conforms('PATCH', path, res, { 'If-None-Match': inm });
  }
  assert.is((await t.events()).length, 1, 'nothing was written');
});

live('updateInventory: 200, 400, 401, 404, 412, 413, 415', async ({ t }) => {
  const path = '/v1/inventory/7';
  conforms('PATCH', path, await t.patch(7, { quantity: 4 }));
  conforms('PATCH', path, await t.patch(7, { quantity: -1 }));
  conforms('PATCH', '/v1/inventory/abc', await t.patch('abc', { quantity: 1 }));
  conforms(
    'PATCH',
    path,
    await t.request({ method: 'PATCH', path, headers: { 'Content-Type': 'application/json' }, body: '{"quantity":1}' }),
  );
  conforms('PATCH', '/v1/inventory/8', await t.patch(8, { quantity: 1 }));
  const stale = await t.patch(7, { quantity: 1 }, { 'If-Match': '"1"' });
  assert.is(stale.status, 412);
  conforms('PATCH', path, stale, { 'If-Match': '"1"' });
  conforms('PATCH', path, await t.patch(7, `{"quantity":${' '.repeat(5000)}1}`));
  conforms('PATCH', path, await t.patch(7, { quantity: 1 }, { 'Content-Type': 'text/plain' }));
});

live('the operations paths: 200, and /readyz 503 while shutting down', async ({ t }) => {
  for (const path of ['/openapi.json', '/healthz', '/readyz']) conforms('GET', path, await t.request({ path }));
  t.accepting = false;
  const notReady = await t.request({ path: '/readyz' });
  assert.is(notReady.status, 503);
  conforms('GET', '/readyz', notReady);
});

live('answers before any operation: 400 (no Host), 408, 417, 431', async ({ t }) => {
  const auth = `Authorization: Bearer ${t.key}\r\n`;
  const noHost = await raw(t.port, `GET /v1/inventory HTTP/1.1\r\n${auth}Connection: close\r\n\r\n`);
  assert.is(noHost.status, 400);
  conforms('GET', '/v1/inventory', noHost);
  const expect = await raw(t.port, `GET /v1/inventory HTTP/1.1\r\nHost: x\r\n${auth}Expect: teapot\r\n\r\n`);
  assert.is(expect.status, 417);
  conforms('GET', '/v1/inventory', expect);
  const big = await raw(t.port, `GET /v1/inventory HTTP/1.1\r\nHost: x\r\n${auth}X-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
  assert.is(big.status, 431);
  conforms('GET', '/v1/inventory', big);
  const slow = await raw(t.port, `GET /v1/inventory HTTP/1.1\r\nHost: x\r\n`);
  assert.is(slow.status, 408);
  conforms('GET', '/v1/inventory', slow);
});

live('a wrong method is 405 with Allow, which the document describes, and lists on no operation', async ({ t }) => {
  const res = await t.request({ method: 'DELETE', path: '/v1/inventory/7', headers: { Authorization: `Bearer ${t.key}` } });
  assert.is(res.status, 405);
  assert.is(res.headers.allow, 'GET, HEAD, PATCH, OPTIONS');
  assert.ok(operationsText('/inventory/{petId}').includes('`Allow`: `GET, HEAD, PATCH, OPTIONS`'), 'the operations give that Allow');
  // On every path, a 405's Allow is the OPTIONS answer's: every method, in one order.
  for (const docPath of Object.keys(doc.paths)) {
    const wrong = await t.request({ method: 'DELETE', path: concrete(docPath), headers: { Authorization: `Bearer ${t.key}` } });
    assert.is(wrong.status, 405, `DELETE ${docPath}`);
    assert.is(wrong.headers.allow, allowOf(docPath).join(', '), `DELETE ${docPath}: Allow`);
  }
  for (const [path, item] of Object.entries(doc.paths as Obj)) {
    for (const [method, op] of Object.entries(item as Obj)) {
      if (method === 'servers') continue;
      assert.not.ok((op as Obj).responses['405'], `${method} ${path} lists 405, which its own method never gets`);
    }
  }
  for (const docPath of Object.keys(doc.paths)) {
    const described = operationsText(docPath);
    assert.ok(/405/.test(described) && /`Allow`/.test(described), `${docPath}: its operations explain 405 and Allow`);
  }
});

/** The descriptions of a documented path's operations, where the rules of the path are told. */
function operationsText(docPath: string): string {
  return Object.entries(doc.paths[docPath] as Obj)
    .filter(([method]) => METHODS.includes(method))
    .map(([, op]) => String((op as Obj).description))
    .join('\n');
}

live('the top of the document says what the service is and how to authenticate, and leaves the rules to the operations', () => {
  const top = doc.info.description as string;
  assert.ok(top.split('\n\n').length <= 3, 'at most three paragraphs');
  assert.match(top, /Authorization: Bearer <key>/);
  for (const rule of [/405/, /OPTIONS/, /CORS/, /Access-Control/, /first of these/]) {
    assert.not.match(top, rule, `the top of the document tells a rule of some operation: ${rule}`);
  }
});

/** A concrete request path for a documented path. */
const UNVERSIONED = ['/openapi.json', '/healthz', '/readyz'];
const concrete = (docPath: string) => (UNVERSIONED.includes(docPath) ? docPath : `/v1${docPath.replace('{petId}', '7')}`);
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/** The Allow an OPTIONS on the path must answer: the document's methods, HEAD with GET, and OPTIONS. */
function allowOf(docPath: string): string[] {
  const methods = Object.keys(doc.paths[docPath]).filter((m) => METHODS.includes(m));
  return [...methods.flatMap((m) => (m === 'get' ? ['GET', 'HEAD'] : [m.toUpperCase()])), 'OPTIONS'];
}

// What the operations say every OPTIONS answer carries.
const OPTIONS_ANSWER: Obj = {
  headers: { 'X-Request-Id': { $ref: '#/components/headers/XRequestId' }, Allow: { required: true, schema: { type: 'string' } } },
};

live(
  'OPTIONS: 204, no body, Allow naming every method of the path; 401 without a key under /v1; described, not an operation',
  async ({ t }) => {
    for (const docPath of Object.keys(doc.paths)) {
      assert.not.ok(doc.paths[docPath].options, `${docPath}: OPTIONS is described by its operations, not listed as one`);
      const expected = allowOf(docPath);
      assert.ok(
        operationsText(docPath).includes(`\`Allow\`: \`${expected.join(', ')}\``),
        `${docPath} gives Allow: ${expected.join(', ')}`,
      );
      assert.match(operationsText(docPath), /`OPTIONS`[^.]*204/, `${docPath}: OPTIONS answers 204`);
      const path = concrete(docPath);
      const withKey = await t.request({ method: 'OPTIONS', path, headers: { Authorization: `Bearer ${t.key}` } });
      const anonymous = await t.request({ method: 'OPTIONS', path });
      for (const res of path.startsWith('/v1/') ? [withKey] : [withKey, anonymous]) {
        assert.is(res.status, 204, `OPTIONS ${path}: ${res.text}`);
        assert.is(res.text, '', `OPTIONS ${path}: no body`);
        assert.is(res.headers.allow, expected.join(', '), `OPTIONS ${path}: Allow, in the documented order`);
        conformsTo(`OPTIONS ${path}`, OPTIONS_ANSWER, res);
      }
      if (path.startsWith('/v1/')) {
        assert.is(anonymous.status, 401, `OPTIONS ${path} without a key`);
        conformsTo(`OPTIONS ${path} 401`, deref({ $ref: '#/components/responses/Unauthorized' }), anonymous);
      }
    }
    for (const docPath of Object.keys(doc.paths).filter((p) => p.startsWith('/inventory'))) {
      assert.match(operationsText(docPath), /\(401 without one\)/, `${docPath}: OPTIONS needs a key`);
    }
  },
);

live('X-Request-Id: every id the service accepts (and keeps or replaces) is valid for the parameter schema', async ({ t }) => {
  const param = deref({ $ref: '#/components/parameters/RequestId' });
  for (const id of ['abc-1.2:3_x', 'has space', 'ü', 'x'.repeat(129), '']) {
    const res = await t.get('/v1/inventory', { 'X-Request-Id': id });
    assert.is(res.status, 200, `the service accepts ${JSON.stringify(id)}`);
    assert.ok(ajv.validate(param.schema, id), `the document refuses ${JSON.stringify(id.slice(0, 20))}: ${ajv.errorsText()}`);
    conforms('GET', '/v1/inventory', res);
  }
});

live('servers: production and staging (variables with defaults) and the local one, all ending in /v1', async ({ t }) => {
  const url = (s: Obj, values: Record<string, string> = {}) =>
    s.url.replace(/\{(\w+)\}/g, (_: string, v: string) => values[v] ?? s.variables?.[v]?.default);
  const described = (doc.servers as Obj[]).map((s) => String(s.description));
  for (const env of ['Production', 'Staging'])
    assert.ok(
      described.some((d) => d.startsWith(env)),
      `a ${env} server`,
    );
  for (const s of doc.servers as Obj[]) {
    const u = new URL(url(s));
    assert.ok(u.pathname === '/v1', `${s.url} ends in /v1`);
  }
  const local = (doc.servers as Obj[]).find((s) => s.url.includes('127.0.0.1'))!;
  const res = await t.request({
    path: `${new URL(url(local, { port: String(t.port) })).pathname}/inventory`,
    headers: { Authorization: `Bearer ${t.key}` },
  });
  assert.is(res.status, 200);
});

live.run();

const ORIGIN = 'https://shop.example.com';
const cors = appSuite('with CORS_ORIGINS, the answers stay as documented and the CORS headers as described', {
  app: { corsOrigins: [ORIGIN] },
  given: (t) => t.track(7, 3),
});

/** Every CORS header sent is named where the key is described, with its value where that is fixed. */
function corsDescribed(what: string, res: Response): string[] {
  const description = String(doc.components.securitySchemes.bearerAuth.description).toLowerCase();
  const sent = Object.keys(res.headers).filter((n) => n.startsWith('access-control-') || n === 'vary');
  for (const name of sent) {
    const value = String(res.headers[name]).toLowerCase();
    if (name === 'access-control-allow-origin') {
      assert.is(value, ORIGIN, `${what}: the origin itself`);
      assert.ok(description.includes(`\`${name}\``), `${what}: the key's description names ${name}`);
    } else {
      assert.ok(description.includes(`\`${name}: ${value}\``), `${what}: the key's description gives ${name}: ${value}`);
    }
  }
  return sent.sort();
}

cors('preflights and actual answers from an allowed origin; none for another origin', async ({ t }) => {
  const auth = { Authorization: `Bearer ${t.key}`, Origin: ORIGIN };
  for (const [path, method] of [
    ['/v1/inventory', 'GET'],
    ['/v1/inventory/7', 'PATCH'],
    ['/v1/inventory/7', 'GET'],
  ] as const) {
    const res = await t.request({ method: 'OPTIONS', path, headers: { Origin: ORIGIN, 'Access-Control-Request-Method': method } });
    assert.is(res.status, 204, `preflight ${path}: ${res.text}`);
    assert.is(res.text, '');
    assert.equal(corsDescribed(`preflight ${path}`, res), [
      'access-control-allow-headers',
      'access-control-allow-methods',
      'access-control-allow-origin',
      'access-control-max-age',
      'vary',
    ]);
  }
  const current = (await t.get('/v1/inventory', { Origin: ORIGIN })).headers.etag as string;
  const answers: [string, string, Record<string, string>, Response, number][] = [
    ['GET', '/v1/inventory', {}, await t.request({ path: '/v1/inventory', headers: auth }), 200],
    [
      'GET',
      '/v1/inventory',
      { 'If-None-Match': current },
      await t.request({ path: '/v1/inventory', headers: { ...auth, 'If-None-Match': current } }),
      304,
    ],
    [
      'GET',
      '/v1/inventory',
      { 'If-Match': '"x"' },
      await t.request({ path: '/v1/inventory', headers: { ...auth, 'If-Match': '"x"' } }),
      412,
    ],
    ['GET', '/v1/inventory', {}, await t.request({ path: '/v1/inventory', headers: { Origin: ORIGIN } }), 401],
    ['GET', '/v1/inventory/7', {}, await t.request({ path: '/v1/inventory/7', headers: auth }), 200],
    ['PATCH', '/v1/inventory/7', {}, await t.patch(7, { quantity: 1 }, { Origin: ORIGIN }), 200],
    ['PATCH', '/v1/inventory/7', {}, await t.patch(7, { quantity: 1 }, { Origin: ORIGIN, 'Content-Type': 'text/plain' }), 415],
    ['GET', '/healthz', {}, await t.request({ path: '/healthz', headers: { Origin: ORIGIN } }), 200],
  ];
  for (const [method, path, sent, res, status] of answers) {
    const what = `${method} ${path} ${status}`;
    assert.is(res.status, status, what);
    conforms(method, path, res, sent);
    assert.equal(corsDescribed(what, res), ['access-control-allow-origin', 'access-control-expose-headers', 'vary'], what);
  }
  const other = await t.request({
    method: 'OPTIONS',
    path: '/v1/inventory',
    headers: { Origin: 'https://evil.example', 'Access-Control-Request-Method': 'GET' },
  });
  assert.is(other.status, 401, "another origin's preflight is an ordinary OPTIONS");
  assert.equal(corsDescribed('another origin', other), ['vary']);
  conformsTo('another origin 401', deref({ $ref: '#/components/responses/Unauthorized' }), other);
});

cors.run();

const meta = suite("the document's metadata");
meta('the license names no SPDX licence the private package does not have', () => {
  const { identifier } = doc.info.license;
  // SPDX expressions name listed licences, or a LicenseRef- of one's own; npm's
  // "UNLICENSED" is neither.
  assert.ok(identifier === undefined || /^LicenseRef-[A-Za-z0-9.-]+$/.test(identifier), `identifier ${identifier}`);
});
meta.run();
