// The OpenAPI document against the running service: the paths' OPTIONS and Allow, the
// X-Request-Id schema, its servers and its metadata.
// This test walks an arbitrary JSON document (any path, operation, response or header
// the document holds), so its values are untyped by nature; the assertions check them.
/* eslint-disable @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-call, @typescript-eslint/no-unsafe-argument, @typescript-eslint/no-unsafe-return */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { liveSuite, METHODS, type Obj, doc, ajv, deref, conforms, conformsTo } from '../kit/openapi-document.ts';

const live = liveSuite("the document describes the service: each path's methods and OPTIONS, request ids, servers");

live('a wrong method is 405 with Allow, which the document describes, and lists on no operation', async ({ t }) => {
  const res = await t.request({ method: 'DELETE', path: '/v1/inventory/7', headers: { Authorization: `Bearer ${t.key}` } });
  assert.is(res.status, 405);
  assert.is(res.headers.allow, 'GET, HEAD, PATCH, OPTIONS');
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
});

/** A concrete request path for a documented path. */
const UNVERSIONED = ['/openapi.json', '/healthz', '/readyz'];
const concrete = (docPath: string) =>
  UNVERSIONED.includes(docPath) ? docPath : `/v1${docPath.replace('{petId}', '7').replace('{level}', '0').replace('{index}', '000')}`;

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

live('servers: every one (variables at their defaults) ends in /v1, and the local one answers', async ({ t }) => {
  const url = (s: Obj, values: Record<string, string> = {}) =>
    s.url.replace(/\{(\w+)\}/g, (_: string, v: string) => values[v] ?? s.variables?.[v]?.default);
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

const meta = suite("the document's metadata");
meta('the license names no SPDX licence the private package does not have', () => {
  const { identifier } = doc.info.license;
  // SPDX expressions name listed licences, or a LicenseRef- of one's own; npm's
  // "UNLICENSED" is neither.
  assert.ok(identifier === undefined || /^LicenseRef-[A-Za-z0-9.-]+$/.test(identifier), `identifier ${identifier}`);
});
meta.run();
