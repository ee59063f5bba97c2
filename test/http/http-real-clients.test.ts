// What real clients send, through a listening server: fetch's conditional GETs, mixed
// conditional headers, If-None-Match and empty If-Match on PATCH, exact paths, OPTIONS,
// and Content-Type / body bytes judged as the decisions say.
import * as assert from 'uvu/assert';
import type { TestApp } from '../kit/app.ts';
import { assertErrorShape, type ErrorBody, type ItemBody, type Response } from '../kit/http.ts';
import { appSuite } from '../kit/suites.ts';

// --- Conditional GET -------------------------------------------------------------------

const cached = appSuite('conditional GET as real clients send it', { given: (t) => t.track(7, 3) });

cached("Node's fetch (Cache-Control/Pragma: no-cache added) gets 304 for the current tag", async ({ t }) => {
  const url = `http://127.0.0.1:${t.port}/v1/inventory`;
  const first = await fetch(url, { headers: { Authorization: `Bearer ${t.key}` } });
  assert.is(first.status, 200);
  const tag = first.headers.get('etag')!;
  await first.arrayBuffer();
  const again = await fetch(url, { headers: { Authorization: `Bearer ${t.key}`, 'If-None-Match': tag } });
  assert.is(again.status, 304);
  assert.is(again.headers.get('etag'), tag);
  assert.is(await again.text(), '');
});

cached('the same headers by hand, on GET and HEAD: 304 with the ETag and no body', async ({ t }) => {
  const tag = String((await t.get()).headers.etag);
  for (const method of ['GET', 'HEAD']) {
    const res = await t.request({
      method,
      path: '/v1/inventory',
      headers: { Authorization: `Bearer ${t.key}`, 'If-None-Match': tag, 'Cache-Control': 'no-cache', Pragma: 'no-cache' },
    });
    assert.is(res.status, 304, method);
    assert.is(res.headers.etag, tag, method);
    assert.is(res.text, '', method);
    assert.is(res.headers['content-type'], undefined, method);
  }
});

cached('If-Modified-Since is ignored when If-None-Match is present', async ({ t }) => {
  const tag = String((await t.get()).headers.etag);
  const old = 'Thu, 01 Jan 1970 00:00:00 GMT';
  const future = 'Fri, 01 Jan 2100 00:00:00 GMT';
  assert.is((await t.get('/v1/inventory', { 'If-None-Match': tag, 'If-Modified-Since': old })).status, 304, 'match + old date');
  assert.is((await t.get('/v1/inventory', { 'If-None-Match': '"other"', 'If-Modified-Since': future })).status, 200, 'no match + new date');
});

cached('If-None-Match: weak form, a list holding the tag, and * are 304; another tag is 200', async ({ t }) => {
  const tag = String((await t.get()).headers.etag);
  for (const header of [`W/${tag}`, `"x", ${tag}`, '*']) {
    assert.is((await t.get('/v1/inventory', { 'If-None-Match': header })).status, 304, header);
  }
  for (const header of ['"x"', 'garbage', '']) {
    const res = await t.get('/v1/inventory', { 'If-None-Match': header });
    assert.is(res.status, 200, header);
    assert.is(res.text, '[{"petId":7,"quantity":3,"status":"available"}]', header);
  }
});

cached('If-Match on GET: the current tag or * is served, another is 412 with the current ETag', async ({ t }) => {
  const tag = String((await t.get()).headers.etag);
  assert.is((await t.get('/v1/inventory', { 'If-Match': tag })).status, 200);
  assert.is((await t.get('/v1/inventory', { 'If-Match': '*' })).status, 200);
  const stale = await t.get('/v1/inventory', { 'If-Match': '"old"' });
  assertErrorShape(stale, 412, 'precondition_failed');
  assert.is(stale.headers.etag, tag);
});

cached.run();

// --- Conditional PATCH -----------------------------------------------------------------

const unwritten = async (t: TestApp) => assert.is((await t.events()).length, 1, 'nothing written');
const conditional = appSuite('conditional PATCH', { given: (t) => t.track(7, 3) });

conditional('If-None-Match: * on a tracked pet is 412 with the current ETag; nothing written', async ({ t }) => {
  const res = await t.patch(7, { quantity: 4 }, { 'If-None-Match': '*' });
  assertErrorShape(res, 412, 'precondition_failed');
  assert.is(res.headers.etag, '"1"');
  assert.match(res.json<ErrorBody>().message, /If-None-Match/);
  await unwritten(t);
});

conditional('If-None-Match holding the current version (weak comparison) is 412; another is written', async ({ t }) => {
  for (const header of ['"1"', 'W/"1"', '"5", "1"', '', 'garbage']) {
    assertErrorShape(await t.patch(7, { quantity: 4 }, { 'If-None-Match': header }), 412, 'precondition_failed', header);
  }
  await unwritten(t);
  const res = await t.patch(7, { quantity: 4 }, { 'If-None-Match': '"5"' });
  assert.is(res.status, 200);
  assert.is(res.headers.etag, '"2"');
});

conditional('an empty If-Match is not an absent one: 412, nothing written', async ({ t }) => {
  const res = await t.patch(7, { quantity: 4 }, { 'If-Match': '' });
  assertErrorShape(res, 412, 'precondition_failed');
  assert.is(res.headers.etag, '"1"');
  await unwritten(t);
});

conditional('either precondition on a pet that is not tracked is 404', async ({ t }) => {
  const cases: Record<string, string>[] = [{ 'If-None-Match': '*' }, { 'If-None-Match': '"1"' }, { 'If-Match': '*' }, { 'If-Match': '' }];
  for (const headers of cases) {
    assertErrorShape(await t.patch(99, { quantity: 4 }, headers), 404, 'pet_not_found', JSON.stringify(headers));
  }
  await unwritten(t);
});

conditional('a PATCH with a matching If-Match and a fetch-style Cache-Control is written', async ({ t }) => {
  const res = await t.patch(7, { quantity: 4 }, { 'If-Match': '"1"', 'Cache-Control': 'no-cache', Pragma: 'no-cache' });
  assert.is(res.status, 200);
});

conditional.run();

// --- Exact paths and OPTIONS -----------------------------------------------------------

const paths = appSuite('exact paths and OPTIONS', { given: (t) => t.track(7, 3) });

paths('a trailing slash or an empty segment is 404 with a key, 401 without, never a redirect', async ({ t }) => {
  const auth = { Authorization: `Bearer ${t.key}` };
  const json = { 'Content-Type': 'application/json' };
  const cases: [string, string][] = [
    ['PATCH', '/v1/inventory/7/'],
    ['PATCH', '/v1//inventory/7'],
    ['PATCH', '/v1/inventory//7'],
    ['GET', '/v1/inventory/'],
    ['GET', '/v1//inventory'],
  ];
  for (const [method, path] of cases) {
    const body = method === 'PATCH' ? '{"quantity": 9}' : undefined;
    const withKey = await t.request({ method, path, headers: { ...auth, ...json }, ...(body ? { body } : {}) });
    assertErrorShape(withKey, 404, 'not_found', `${method} ${path}`);
    assert.is(withKey.headers.location, undefined);
    const without = await t.request({ method, path, headers: json, ...(body ? { body } : {}) });
    assertErrorShape(without, 401, 'unauthorized', `${method} ${path} without a key`);
  }
  assertErrorShape(await t.request({ path: '/healthz/' }), 404, 'not_found', '/healthz/');
  await unwritten(t);
});

paths('OPTIONS on an existing path is 204 with a complete Allow and no body', async ({ t }) => {
  const auth = { Authorization: `Bearer ${t.key}` };
  // The documented order, not the router's (HEAD, GET).
  const allowOf = (res: Response) => String(res.headers.allow);
  const list = await t.request({ method: 'OPTIONS', path: '/v1/inventory', headers: auth });
  assert.is(list.status, 204);
  assert.is(list.text, '');
  assert.is(allowOf(list), 'GET, HEAD, OPTIONS');
  assert.ok(list.headers['x-request-id']);
  const item = await t.request({ method: 'OPTIONS', path: '/v1/inventory/7', headers: auth });
  assert.is(item.status, 204);
  assert.is(allowOf(item), 'GET, HEAD, PATCH, OPTIONS');
  const health = await t.request({ method: 'OPTIONS', path: '/healthz' });
  assert.is(health.status, 204);
  assert.is(allowOf(health), 'GET, HEAD, OPTIONS');
});

paths('OPTIONS needs a key under /v1 and is 404 on a path that does not exist', async ({ t }) => {
  assertErrorShape(await t.request({ method: 'OPTIONS', path: '/v1/inventory' }), 401, 'unauthorized');
  assertErrorShape(
    await t.request({ method: 'OPTIONS', path: '/v1/nope', headers: { Authorization: `Bearer ${t.key}` } }),
    404,
    'not_found',
  );
  assertErrorShape(
    await t.request({ method: 'OPTIONS', path: '/v1/inventory/7/', headers: { Authorization: `Bearer ${t.key}` } }),
    404,
    'not_found',
  );
});

paths.run();

// --- Media type and body bytes ---------------------------------------------------------

const media = appSuite('Content-Type and body bytes', { given: (t) => t.track(7, 3), then: (t) => unwritten(t) });

media('another charset, another or a repeated parameter: 415 with Accept-Patch', async ({ t }) => {
  for (const type of [
    'application/json; charset=utf-16',
    'application/json; charset=UTF-16LE',
    'application/json; charset=utf8',
    'application/json; charset=utf-8; charset=utf-16',
    'application/json; charset=utf-16; charset=utf-8',
    'application/json; charset=utf-8; charset=utf-8',
    'application/json; x=y',
    'application/json; charset=utf-8; x=y',
    'application/json;',
  ]) {
    const res = await t.patch(7, '{"quantity": 5', { 'Content-Type': type });
    assertErrorShape(res, 415, 'unsupported_media_type', type);
    assert.is(res.headers['accept-patch'], 'application/json', type);
  }
});

media('a body that is not valid UTF-8 is 400 malformed_json, not repaired', async ({ t }) => {
  for (const bytes of [
    Buffer.concat([Buffer.from('{"'), Buffer.from([0xff]), Buffer.from('quantity":5}')]),
    Buffer.concat([Buffer.from('{"quantity":5,"x":"'), Buffer.from([0xc0, 0xaf]), Buffer.from('"}')]),
    Buffer.concat([Buffer.from('{"quantity":5,"x":"'), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('"}')]),
    Buffer.concat([Buffer.from('{"quantity":5,"x":"'), Buffer.from([0xe2, 0x82]), Buffer.from('"}')]),
  ]) {
    const res = await t.request({
      method: 'PATCH',
      path: '/v1/inventory/7',
      headers: { Authorization: `Bearer ${t.key}`, 'Content-Type': 'application/json' },
      body: bytes,
    });
    assertErrorShape(res, 400, 'malformed_json', bytes.toString('hex'));
    assert.match(res.json<ErrorBody>().message, /UTF-8/);
  }
});

media('an empty chunked body without Content-Type is a missing body (400); a non-empty one is 415', async ({ t }) => {
  const auth = { Authorization: `Bearer ${t.key}` };
  const empty = await t.request({ method: 'PATCH', path: '/v1/inventory/7', headers: auth, body: '', chunked: true });
  assertErrorShape(empty, 400, 'missing_body', 'empty chunked');
  const some = await t.request({ method: 'PATCH', path: '/v1/inventory/7', headers: auth, body: '{"quantity":5}', chunked: true });
  assertErrorShape(some, 415, 'unsupported_media_type', 'chunked without Content-Type');
  const big = await t.request({ method: 'PATCH', path: '/v1/inventory/7', headers: auth, body: 'x'.repeat(9000), chunked: true });
  assertErrorShape(big, 415, 'unsupported_media_type', 'large chunked without Content-Type: 415 before 413');
});

media.run();

const accepted = appSuite('what is still accepted', { given: (t) => t.track(7, 3) });

accepted('charset=utf-8 in any case, quoted or not, and a UTF-8 byte order mark', async ({ t }) => {
  for (const type of [
    'application/json; charset=utf-8',
    'application/json;charset=UTF-8',
    'Application/JSON; Charset="Utf-8"',
    'application/json ; charset=utf-8',
  ]) {
    assert.is((await t.patch(7, { quantity: 5 }, { 'Content-Type': type })).status, 200, type);
  }
  const bom = await t.request({
    method: 'PATCH',
    path: '/v1/inventory/7',
    headers: { Authorization: `Bearer ${t.key}`, 'Content-Type': 'application/json' },
    body: Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"quantity":6}')]),
  });
  assert.is(bom.status, 200, bom.text);
  assert.is(bom.json<ItemBody>().quantity, 6);
  // One mark is the encoding's; a second one is text, and not JSON.
  const twice = await t.request({
    method: 'PATCH',
    path: '/v1/inventory/7',
    headers: { Authorization: `Bearer ${t.key}`, 'Content-Type': 'application/json' },
    body: Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf, 0xef, 0xbb, 0xbf]), Buffer.from('{"quantity":1}')]),
  });
  assertErrorShape(twice, 400, 'malformed_json');
  assert.is((await t.get('/v1/inventory/7')).json<ItemBody>().quantity, 6, 'nothing was written');
  const escaped = await t.patch(7, '{"quantity":7}', { 'Content-Type': 'application/json' });
  assert.is(escaped.status, 200);
});

accepted.run();
