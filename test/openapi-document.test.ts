// The OpenAPI document tells the truth about the running service: real requests, one per
// kind of answer, are checked against what the document says of that operation (status
// listed, headers declared and marked required exactly when the service always sends
// them, Error bodies valid), and its servers and request-header schemas are usable.
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { startApp, type Response, type TestApp } from './helpers.ts';
import { DEFAULT_LIMITS } from '../src/http/node-server.ts';

type Obj = Record<string, any>;
const doc: Obj = JSON.parse(readFileSync(new URL('../src/openapi.json', import.meta.url), 'utf8'));
const ajv = new Ajv2020({ strict: false, allErrors: true });
ajv.addSchema(doc, 'openapi');
const deref = (o: Obj): Obj => (o.$ref ? deref(o.$ref.slice(2).split('/').reduce((a: Obj, k: string) => a[k], doc)) : o);

// Headers the service sends on some answers and always on those: where one is seen, the
// document must declare it on that response and mark it required.
const WATCHED = ['x-request-id', 'etag', 'www-authenticate', 'accept-patch', 'retry-after', 'allow'];

function operationOf(method: string, path: string): Obj {
  const p = path.split('?')[0]!;
  const item = p === '/v1/inventory' ? doc.paths['/inventory'] : p.startsWith('/v1/inventory/') ? doc.paths['/inventory/{petId}'] : doc.paths[p];
  const op = item?.[method.toLowerCase()];
  if (!op) throw new Error(`the document has no operation for ${method} ${path}`);
  return op;
}

function conforms(method: string, path: string, res: Pick<Response, 'status' | 'headers' | 'text'>): void {
  const op = operationOf(method, path);
  const what = `${op.operationId} ${res.status}`;
  const documented = op.responses[String(res.status)];
  assert.ok(documented, `${what}: the status is not listed on the operation`);
  const response = deref(documented);
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

const live = suite<{ t: TestApp }>('the document describes the answers the service gives');
live.before.each(async (ctx) => {
  ctx.t = await startApp(':memory:', { ...DEFAULT_LIMITS, headersTimeoutMs: 300, requestTimeoutMs: 600, checkIntervalMs: 100 });
  await ctx.t.track(7, 3);
});
live.after.each(async (ctx) => ctx.t.close());

live('listInventory: 200, 304 (weak, list, *), 401', async ({ t }) => {
  const ok = await t.get();
  conforms('GET', '/v1/inventory', ok);
  for (const inm of [ok.headers.etag as string, `W/${ok.headers.etag}`, `"other", ${ok.headers.etag}`, '*']) {
    const res = await t.get('/v1/inventory', { 'If-None-Match': inm });
    assert.is(res.status, 304, inm);
    conforms('GET', '/v1/inventory', res);
  }
  conforms('GET', '/v1/inventory', await t.request({ path: '/v1/inventory' }));
  conforms('GET', '/v1/inventory', await t.request({ path: '/v1/inventory', headers: { Authorization: 'Bearer pinv_nope' } }));
});

live('updateInventory: 200, 400, 401, 404, 412, 413, 415', async ({ t }) => {
  const path = '/v1/inventory/7';
  conforms('PATCH', path, await t.patch(7, { quantity: 4 }));
  conforms('PATCH', path, await t.patch(7, { quantity: -1 }));
  conforms('PATCH', '/v1/inventory/abc', await t.patch('abc', { quantity: 1 }));
  conforms('PATCH', path, await t.request({ method: 'PATCH', path, headers: { 'Content-Type': 'application/json' }, body: '{"quantity":1}' }));
  conforms('PATCH', '/v1/inventory/8', await t.patch(8, { quantity: 1 }));
  const stale = await t.patch(7, { quantity: 1 }, { 'If-Match': '"1"' });
  assert.is(stale.status, 412);
  conforms('PATCH', path, stale);
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
  const res = await t.get('/v1/inventory/7');
  assert.is(res.status, 405);
  assert.is(res.headers.allow, 'PATCH');
  for (const [path, item] of Object.entries(doc.paths as Obj)) {
    for (const [method, op] of Object.entries(item as Obj)) {
      if (method === 'servers') continue;
      assert.not.ok((op as Obj).responses['405'], `${method} ${path} lists 405, which its own method never gets`);
    }
  }
  assert.ok(/405/.test(doc.info.description) && /`Allow`/.test(doc.info.description), 'the description explains 405 and Allow');
});

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
  for (const env of ['Production', 'Staging']) assert.ok(described.some((d) => d.startsWith(env)), `a ${env} server`);
  for (const s of doc.servers as Obj[]) {
    const u = new URL(url(s));
    assert.ok(u.pathname === '/v1', `${s.url} ends in /v1`);
  }
  const local = (doc.servers as Obj[]).find((s) => s.url.includes('127.0.0.1'))!;
  const res = await t.request({ path: `${new URL(url(local, { port: String(t.port) })).pathname}/inventory`, headers: { Authorization: `Bearer ${t.key}` } });
  assert.is(res.status, 200);
});

live.run();

const meta = suite('the document\'s metadata');
meta('the license names no SPDX licence the private package does not have', () => {
  const { identifier } = doc.info.license;
  // SPDX expressions name listed licences, or a LicenseRef- of one's own; npm's
  // "UNLICENSED" is neither.
  assert.ok(identifier === undefined || /^LicenseRef-[A-Za-z0-9.-]+$/.test(identifier), `identifier ${identifier}`);
});
meta.run();
