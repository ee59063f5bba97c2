// The OpenAPI document tells the truth about the running service: real requests, one per
// kind of answer, are checked against what the document says of that operation (status
// listed, headers declared and marked required exactly when the service always sends
// them, Error bodies valid), and its servers and request-header schemas are usable.
// This test walks an arbitrary JSON document (any path, operation, response or header
// the document holds), so its values are untyped by nature; the assertions check them.
/* eslint-disable @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-argument */
import * as assert from 'uvu/assert';
import { assertErrorShape } from '../kit/http.ts';
import { liveSuite, METHODS, type Obj, doc, conforms, raw } from '../kit/openapi-document.ts';

const live = liveSuite('the document describes the answers the service gives');

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

live('every Retry-After is declared alike, as the integer of seconds the service sends', () => {
  const declared: [string, unknown][] = [];
  const walk = (node: unknown, path: string): void => {
    if (node === null || typeof node !== 'object') return;
    for (const [key, value] of Object.entries(node)) {
      if (key === 'Retry-After' && path.endsWith('/headers')) declared.push([`${path}/${key}`, (value as Obj).schema]);
      walk(value, `${path}/${key}`);
    }
  };
  walk(doc, '#');
  assert.ok(declared.length >= 3, `found ${declared.length} Retry-After headers`);
  for (const [where, schema] of declared) assert.equal(schema, { type: 'integer', minimum: 0 }, where);
});

live.run();
