// With CORS_ORIGINS set, the answers stay as the OpenAPI document says and the CORS
// headers are those it describes.
// This test walks an arbitrary JSON document (any path, operation, response or header
// the document holds), so its values are untyped by nature; the assertions check them.
/* eslint-disable @typescript-eslint/no-unsafe-member-access */
import * as assert from 'uvu/assert';
import { type Response } from '../kit/http.ts';
import { appSuite } from '../kit/suites.ts';
import { doc, deref, conforms, conformsTo } from '../kit/openapi-document.ts';

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
