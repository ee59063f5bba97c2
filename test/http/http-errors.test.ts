// Bad input and refusals through the HTTP app: each gets the Error shape with the right
// status and code, the first fault in the order the service checks them, and leaves nothing behind.
import { gzipSync } from 'node:zlib';
import * as assert from 'uvu/assert';
import {
  assertErrorShape,
  parseJson,
  rawAnswer as answerOf,
  sendRaw as raw,
  type AccessLogLine,
  type ErrorBody,
  type ItemBody,
} from '../kit/http.ts';
import { appSuite } from '../kit/suites.ts';
import { logged } from '../kit/logged.ts';

function setup(name: string) {
  return appSuite(name, {
    given: (t) => t.track(7, 3),
    // Whatever was refused left nothing behind: only the PetTracked of the setup.
    then: async (t) => {
      assert.is((await t.events()).length, 1, 'no event appended by a refused request');
      assert.is((await t.get()).text, '[{"petId":7,"quantity":3,"status":"available"}]');
    },
  });
}

const body = setup('PATCH body validation');

body('values that are not an integer from 0 to 2147483647 are 400 invalid_body naming quantity', async ({ t }) => {
  for (const raw of ['"5"', 'true', 'null', '1.5', '-1', '2147483648', '1e400', '[]', '{}', '5e-1']) {
    const res = await t.patch(7, `{"quantity": ${raw}}`);
    assertErrorShape(res, 400, 'invalid_body', raw);
    assert.match(res.json<ErrorBody>().message, /quantity/, raw);
    assert.match(res.json<ErrorBody>().message, /integer from 0 to 2147483647/, raw);
  }
});

body('a number out of range is quoted as the client wrote it, not as a double rounds it', async ({ t }) => {
  for (const raw of ['9007199254740993', '-9007199254740993', '2147483648.0', '1e400', '-0.5e1', '12345678901234567890123456789']) {
    const res = await t.patch(7, `{"quantity": ${raw}}`);
    assertErrorShape(res, 400, 'invalid_body', raw);
    assert.match(res.json<ErrorBody>().message, `; got number ${raw}`, raw);
  }
  const long = '9'.repeat(60);
  const res = await t.patch(7, `{"quantity": ${long}}`);
  assert.match(res.json<ErrorBody>().message, `; got number ${'9'.repeat(40)}…`, 'a long literal is cut');
});

body('a missing quantity, unknown members and non-objects are 400 invalid_body', async ({ t }) => {
  const cases: [string, RegExp][] = [
    ['{}', /"quantity" is required/],
    ['{"quantity": 1, "status": "sold"}', /unknown member "status"/],
    ['{"qty": 1}', /"quantity" is required|unknown member "qty"/],
    ['{"quantity": 1, "__proto__": {"x": 1}}', /unknown member "__proto__"/],
    ['[{"quantity": 1}]', /JSON object/],
    ['5', /JSON object/],
    ['"quantity"', /JSON object/],
    ['null', /JSON object/],
  ];
  for (const [raw, message] of cases) {
    const res = await t.patch(7, raw);
    assertErrorShape(res, 400, 'invalid_body', raw);
    assert.match(res.json<ErrorBody>().message, message, raw);
  }
});

body('a number that JSON.parse would round to an integer is still a fraction: 400', async ({ t }) => {
  for (const raw of ['5.0000000000000001', '1e-400', '2147483646.99999999999', '1.55e1']) {
    const res = await t.patch(7, `{"quantity": ${raw}}`);
    assertErrorShape(res, 400, 'invalid_body', raw);
    assert.match(res.json<ErrorBody>().message, /quantity must be an integer from 0 to 2147483647/, raw);
  }
});

body('a body that merely mentions prototype is malformed JSON, not a forbidden member', async ({ t }) => {
  assertErrorShape(await t.patch(7, 'prototype'), 400, 'malformed_json');
  assertErrorShape(await t.patch(7, '{"quantity": 1, "prototype": 2}'), 400, 'invalid_body');
});

body('a member given twice is 400 invalid_body, even when the last one is valid', async ({ t }) => {
  for (const raw of ['{"quantity": 1, "quantity": 2}', '{"quantity": "x", "quantity": 5}', '{"quantity": 5, "\\u0071uantity": 6}']) {
    const res = await t.patch(7, raw);
    assertErrorShape(res, 400, 'invalid_body', raw);
    assert.match(res.json<ErrorBody>().message, /"quantity" appears more than once/, raw);
  }
  // The same name in different objects is no duplicate (refused for the nesting alone).
  assertErrorShape(await t.patch(7, '{"quantity": {"quantity": 1}}'), 400, 'invalid_body');
  assert.match((await t.patch(7, '{"quantity": {"quantity": 1}}')).json<ErrorBody>().message, /integer/);
});

body('malformed JSON is 400 malformed_json; an empty body is 400 missing_body', async ({ t }) => {
  for (const raw of ['{"quantity": 1', '{quantity: 1}', "{'quantity': 1}", 'quantity=1', '   ']) {
    assertErrorShape(await t.patch(7, raw), 400, 'malformed_json', raw);
  }
  assertErrorShape(await t.patch(7, ''), 400, 'missing_body', 'empty with Content-Type');
  const noType = await t.request({ method: 'PATCH', path: '/v1/inventory/7', headers: { Authorization: `Bearer ${t.key}` } });
  assertErrorShape(noType, 400, 'missing_body', 'no Content-Type, no body');
});

body.run();

const path = setup('PATCH path id');

path('anything but canonical digits from 1 to int64 max is 400 invalid_pet_id', async ({ t }) => {
  for (const id of [
    'abc',
    '1.5',
    '1e3',
    '+7',
    '007',
    '%207',
    '%20',
    '0',
    '-3',
    '9223372036854775808',
    '99999999999999999999',
    '7a',
    '0x7',
  ]) {
    const res = await t.patch(id, { quantity: 1 });
    assertErrorShape(res, 400, 'invalid_pet_id', id);
    assert.match(res.json<ErrorBody>().message, /petId/, id);
  }
});

path.run();

const media = setup('PATCH media type and size');

media('another media type is 415 with Accept-Patch; a body without Content-Type too', async ({ t }) => {
  for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/merge-patch+json', 'application/jsonx']) {
    const res = await t.patch(7, { quantity: 1 }, { 'Content-Type': type });
    assertErrorShape(res, 415, 'unsupported_media_type', type);
    assert.is(res.headers['accept-patch'], 'application/json');
  }
  const untyped = await t.request({
    method: 'PATCH',
    path: '/v1/inventory/7',
    headers: { Authorization: `Bearer ${t.key}` },
    body: '{"quantity": 1}',
  });
  assertErrorShape(untyped, 415, 'unsupported_media_type', 'no Content-Type');
  assert.is(untyped.headers['accept-patch'], 'application/json');
});

media('a malformed Content-Type is 415, before the size is judged', async ({ t }) => {
  for (const type of ['application/json; foo', 'application/json; charset', 'application/json/x', ';']) {
    assertErrorShape(
      await t.patch(7, `{"quantity": 1, "pad": "${'x'.repeat(5000)}"}`, { 'Content-Type': type }),
      415,
      'unsupported_media_type',
      type,
    );
  }
});

media('JSON is read as UTF-8: another charset is 415', async ({ t }) => {
  for (const type of ['application/json; charset=latin1', 'application/json; charset="utf-16"']) {
    const res = await t.patch(7, { quantity: 1 }, { 'Content-Type': type });
    assertErrorShape(res, 415, 'unsupported_media_type', type);
  }
});

media('a body over 4 KiB is 413, declared or chunked; 4 KiB exactly is read', async ({ t }) => {
  const big = `{"quantity": 1, "pad": "${'x'.repeat(5000)}"}`;
  assertErrorShape(await t.patch(7, big), 413, 'payload_too_large', 'Content-Length');
  const chunked = await t.request({
    method: 'PATCH',
    path: '/v1/inventory/7',
    headers: { Authorization: `Bearer ${t.key}`, 'Content-Type': 'application/json' },
    body: big,
    chunked: true,
  });
  assertErrorShape(chunked, 413, 'payload_too_large', 'chunked');
  const exact = `{"quantity": 1${' '.repeat(4096 - 15)}}`;
  assert.is(Buffer.byteLength(exact), 4096);
  // Read whole (not 413), then refused for another reason: the pet id.
  assertErrorShape(await t.patch(0, exact), 400, 'invalid_pet_id', '4096 bytes');
});

media.run();

const order = setup('precedence of errors');

order('401 first: no key beats every other fault, also on unknown paths', async ({ t }) => {
  const res = await t.request({
    method: 'DELETE',
    path: '/v1/inventory/abc',
    headers: { 'Content-Type': 'text/plain' },
    body: 'x'.repeat(5000),
  });
  assertErrorShape(res, 401, 'unauthorized');
  assertErrorShape(await t.request({ path: '/v1/no/such/thing' }), 401, 'unauthorized', 'unknown path');
  assertErrorShape(await t.request({ path: '/v1' }), 401, 'unauthorized', '/v1');
  assertErrorShape(await t.request({ path: '/V1/inventory' }), 401, 'unauthorized', 'upper case');
});

order('405 before 415, 413 and 400: DELETE /v1/inventory/abc is 405 with Allow: GET, HEAD, PATCH, OPTIONS', async ({ t }) => {
  const res = await t.request({ method: 'DELETE', path: '/v1/inventory/abc', headers: { Authorization: `Bearer ${t.key}` } });
  assertErrorShape(res, 405, 'method_not_allowed');
  // Every method the path supports, OPTIONS included (RFC 9110 15.5.6), in the documented order.
  assert.is(res.headers.allow, 'GET, HEAD, PATCH, OPTIONS');
  const post = await t.request({
    method: 'POST',
    path: '/v1/inventory',
    headers: { Authorization: `Bearer ${t.key}`, 'Content-Type': 'text/plain' },
    body: 'x',
  });
  assertErrorShape(post, 405, 'method_not_allowed', 'POST');
  assert.is(post.headers.allow, 'GET, HEAD, OPTIONS');
  const put = await t.request({ method: 'PUT', path: '/v1/inventory/7', headers: { Authorization: `Bearer ${t.key}` } });
  assertErrorShape(put, 405, 'method_not_allowed', 'PUT');
  // A method the router does not know at all: 405 with Allow on a path that exists,
  // 404 on one that does not.
  const unknownMethod = await t.request({ method: 'PROPFIND', path: '/v1/inventory', headers: { Authorization: `Bearer ${t.key}` } });
  assertErrorShape(unknownMethod, 405, 'method_not_allowed', 'PROPFIND on a route');
  assert.is(unknownMethod.headers.allow, 'GET, HEAD, OPTIONS');
  assertErrorShape(
    await t.request({ method: 'PROPFIND', path: '/v1/nope', headers: { Authorization: `Bearer ${t.key}` } }),
    404,
    'not_found',
    'PROPFIND elsewhere',
  );
  assertErrorShape(await t.request({ method: 'PROPFIND', path: '/nope' }), 404, 'not_found', 'PROPFIND outside /v1');
});

order('405 before the scope of the key: a read-only key is told the method, as a write key is; its PATCH stays 403', async ({ t }) => {
  const readOnly = await t.keys.create('reader', 'test', 'read-only');
  for (const key of [t.key, readOnly]) {
    const which = key === t.key ? 'write key' : 'read-only key';
    for (const [method, path, allow] of [
      ['POST', '/v1/inventory/1', 'GET, HEAD, PATCH, OPTIONS'],
      ['DELETE', '/v1/inventory/7', 'GET, HEAD, PATCH, OPTIONS'],
      ['PUT', '/v1/inventory', 'GET, HEAD, OPTIONS'],
      ['PATCH', '/v1/inventory', 'GET, HEAD, OPTIONS'],
      ['PROPFIND', '/v1/log/head', 'GET, HEAD, OPTIONS'],
    ] as const) {
      const res = await t.request({ method, path, headers: { Authorization: `Bearer ${key}` } });
      assertErrorShape(res, 405, 'method_not_allowed', `${which}: ${method} ${path}`);
      assert.is(res.headers.allow, allow, `${which}: ${method} ${path}`);
    }
  }
  assertErrorShape(await t.patch(7, { quantity: 1 }, { Authorization: `Bearer ${readOnly}` }), 403, 'forbidden', 'PATCH');
  // The key is still judged first: a POST with no valid key is 401.
  assertErrorShape(await t.request({ method: 'POST', path: '/v1/inventory/1' }), 401, 'unauthorized', 'POST without a key');
});

order('415 before 413, 413 before the path id, path id before body, body before 404, 404 before 412', async ({ t }) => {
  const huge = 'x'.repeat(5000);
  assertErrorShape(await t.patch('abc', huge, { 'Content-Type': 'text/plain' }), 415, 'unsupported_media_type');
  assertErrorShape(await t.patch('abc', huge), 413, 'payload_too_large');
  assertErrorShape(await t.patch('abc', '{not json'), 400, 'invalid_pet_id');
  assertErrorShape(await t.patch('abc', ''), 400, 'invalid_pet_id');
  assertErrorShape(await t.patch(99, '{not json'), 400, 'malformed_json');
  assertErrorShape(await t.patch(99, { quantity: -1 }), 400, 'invalid_body');
  assertErrorShape(await t.patch(99, { quantity: 1 }, { 'If-Match': '"42"' }), 404, 'pet_not_found');
  assertErrorShape(await t.patch(7, { quantity: 1 }, { 'If-Match': '"42"' }), 412, 'precondition_failed');
});

order.run();

const auth = setup('bearer authentication');

auth('no credential, or another scheme: 401 with WWW-Authenticate Bearer realm and no error code', async ({ t }) => {
  for (const header of [undefined, 'Basic dXNlcjpwYXNz', 'Token abc', '']) {
    const res = await t.request({ path: '/v1/inventory', headers: header === undefined ? {} : { Authorization: header } });
    assertErrorShape(res, 401, 'unauthorized', String(header));
    assert.is(res.headers['www-authenticate'], 'Bearer realm="inventory"', String(header));
  }
});

auth('a Bearer credential that is empty, malformed, unknown or revoked: 401 invalid_token', async ({ t }) => {
  const other = await t.keys.create('other', 'test');
  await t.keys.revoke('other', 'test');
  for (const header of [
    'Bearer',
    'Bearer ',
    'Bearer pinv_unknownkey000000000000000000000',
    `Bearer ${t.key} extra`,
    'Bearer a,b',
    `Bearer ${other}`,
  ]) {
    const res = await t.request({ path: '/v1/inventory', headers: { Authorization: header } });
    assertErrorShape(res, 401, 'unauthorized', header);
    assert.is(res.headers['www-authenticate'], 'Bearer realm="inventory", error="invalid_token"', header);
    assert.not.match(res.text, /pinv_/, 'the key is not echoed');
  }
});

auth('the scheme name is case-insensitive; the key names the actor', async ({ t }) => {
  for (const scheme of ['bearer', 'BEARER', 'Bearer']) {
    assert.is((await t.request({ path: '/v1/inventory', headers: { Authorization: `${scheme} ${t.key}` } })).status, 200, scheme);
  }
});

auth('a revoked key stops working at once', async ({ t }) => {
  const key = await t.keys.create('short-lived', 'test');
  const headers = { Authorization: `Bearer ${key}` };
  assert.is((await t.request({ path: '/v1/inventory', headers })).status, 200);
  await t.keys.revoke('short-lived', 'test');
  assertErrorShape(await t.request({ path: '/v1/inventory', headers }), 401, 'unauthorized');
});

auth.run();

function bodyOf<T>(response: string): T {
  return parseJson<T>(response.slice(response.indexOf('\r\n\r\n') + 4));
}

const wire = setup('requests Node cannot parse');

wire('garbage, a bad Content-Length and oversized headers still get the Error shape', async ({ t }) => {
  const garbage = await raw(t.port, 'NOT HTTP AT ALL\r\n\r\n');
  assert.match(garbage, /^HTTP\/1\.1 400 /);
  assert.match(garbage, /\r\nX-Request-Id: [0-9a-f-]{36}\r\n/, 'every response carries a request id');
  assert.equal(bodyOf(garbage), { code: 'bad_request', message: 'the request is not valid HTTP/1.1', status: 400 });

  const badLength = await raw(
    t.port,
    `PATCH /v1/inventory/7 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.key}\r\nContent-Type: application/json\r\nContent-Length: abc\r\n\r\n{"quantity":1}`,
  );
  assert.match(badLength, /^HTTP\/1\.1 400 /);
  assertErrorShape(answerOf(badLength), 400, 'bad_request', 'a bad Content-Length');

  const huge = await raw(t.port, `GET /v1/inventory HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20000)}\r\n\r\n`);
  assert.match(huge, /^HTTP\/1\.1 431 /);
  assert.equal(bodyOf(huge), { code: 'headers_too_large', message: 'the request headers are too large', status: 431 });
});

wire('a body cut short (the client closes early) is 400 bad_request, writes nothing, and is logged as the 400 it got', async ({ t }) => {
  const res = await raw(
    t.port,
    `PATCH /v1/inventory/7 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.key}\r\nX-Request-Id: cut-1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"quantity":1}`,
  );
  assert.match(res, /^HTTP\/1\.1 400 /);
  assertErrorShape(answerOf(res), 400, 'bad_request');
  // The access line is written when the response closes, which may come a turn later.
  const line = parseJson<AccessLogLine>(await logged(t, /"requestId":"cut-1"/));
  // The client half-closed but read the answer: what it got is logged.
  assert.is(line.aborted, undefined);
  assert.is(line.status, 400);
});

wire('a bad chunk after a GET that answers later: the 400 is sent, and the late answer of the route is dropped quietly', async ({ t }) => {
  // The entry route reads from the store before it answers; the parser refuses the chunk
  // in the meantime and the 400 goes out on the request's own response.
  const res = await raw(
    t.port,
    `GET /v1/inventory/7 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.key}\r\nX-Request-Id: late-1\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\n`,
  );
  assert.match(res, /^HTTP\/1\.1 400 /);
  assertErrorShape(answerOf(res), 400, 'bad_request');
  assert.is(answerOf(res).headers['x-request-id'], 'late-1', 'the request id the app logs');
  // A later request of the same kind has been answered, so the first one's read is done.
  assert.is((await t.get('/v1/inventory/7')).status, 200);
  const lines = t.logs.map((l) => parseJson<AccessLogLine & { level: number; msg?: string }>(l));
  assert.equal(
    lines.filter((l) => l.level >= 40),
    [],
    'the late answer finds the response ended and is no error',
  );
  assert.is(lines.find((l) => l.requestId === 'late-1')?.status, 400);
});

wire('a request that asks for an Upgrade is served as any other, and its body cut short is 400 at once', async ({ t }) => {
  const upgrade = 'Connection: close\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n';
  const served = await raw(t.port, `GET /v1/inventory/7 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.key}\r\n${upgrade}\r\n`);
  assert.match(served, /^HTTP\/1\.1 200 /, 'the service upgrades to nothing: the request is served');
  assert.is(bodyOf<ItemBody>(served).quantity, 3);
  const patch = (more: string) =>
    `PATCH /v1/inventory/7 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.key}\r\nContent-Type: application/json\r\n${upgrade}${more}\r\n`;
  // The client closes its side with the body unfinished; the answer comes before the
  // reader here gives up (sendRaw waits 3 s), not after the request timeout.
  const cuts: [string, string][] = [
    [patch('Transfer-Encoding: chunked\r\n') + '7\r\n{"quant\r\n7\r\nity":0}\r\n', 'chunked, no last chunk'],
    [patch('Content-Length: 100\r\n') + '{"quantity":0}', 'shorter than its Content-Length'],
  ];
  for (const [cut, what] of cuts) {
    const res = await raw(t.port, cut);
    assert.match(res, /^HTTP\/1\.1 400 /, what);
    assert.equal(bodyOf(res), { code: 'bad_request', message: 'the request is not valid HTTP/1.1', status: 400 }, what);
  }
});

wire('no Host, an unmet Expect, CONNECT: answered in the Error shape, not by Node bare', async ({ t }) => {
  const noHost = await raw(t.port, 'GET /healthz HTTP/1.1\r\n\r\n');
  assert.match(noHost, /^HTTP\/1\.1 400 /);
  assertErrorShape(answerOf(noHost), 400, 'bad_request', 'no Host');
  assert.match(noHost, /\r\nX-Request-Id: /);
  const http10 = await raw(t.port, 'GET /healthz HTTP/1.0\r\n\r\n');
  assert.match(http10, /^HTTP\/1\.1 200 /, 'HTTP/1.0 needs no Host');
  const expect = await raw(t.port, 'GET /healthz HTTP/1.1\r\nHost: x\r\nExpect: teapot\r\n\r\n');
  assert.match(expect, /^HTTP\/1\.1 417 /);
  assert.equal(bodyOf(expect), { code: 'expectation_failed', message: 'only Expect: 100-continue is supported', status: 417 });
  const tunnel = await raw(t.port, 'CONNECT x:80 HTTP/1.1\r\nHost: x\r\n\r\n');
  assert.match(tunnel, /^HTTP\/1\.1 400 /);
  assertErrorShape(answerOf(tunnel), 400, 'bad_request', 'CONNECT');
});

wire('a method the HTTP parser does not know, or one in lower case, is 400 bad_request before the key', async ({ t }) => {
  for (const method of ['FOO', 'get', 'Patch']) {
    for (const path of ['/v1/inventory', '/healthz', '/nope']) {
      const res = await raw(t.port, `${method} ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.key}\r\n\r\n`);
      assert.match(res, /^HTTP\/1\.1 400 /, `${method} ${path}`);
      assert.equal(bodyOf(res), { code: 'bad_request', message: 'the request is not valid HTTP/1.1', status: 400 }, `${method} ${path}`);
    }
  }
});

wire('two Host lines, or a Host that is no host: 400 bad_request (RFC 9112 section 3.2); a host and port pass', async ({ t }) => {
  const refused: [string, string][] = [
    ['Host: x\r\nHost: x', 'two Host lines, the same'],
    ['Host: a\r\nHost: b', 'two Host lines'],
    ['HOST: a\r\nhost: a', 'two Host lines, written in other cases'],
    ['Host: a b@c/../', 'no host'],
    ['Host: a@b', 'user info'],
    ['Host: x:80:80', 'two ports'],
    ['Host: x:port', 'a port that is no number'],
    ['Host: [::g]', 'an IPv6 literal that is none'],
    ['Host: ::1', 'an IPv6 address without brackets'],
  ];
  for (const [lines, what] of refused) {
    for (const version of ['1.1', '1.0']) {
      const res = await raw(t.port, `GET /healthz HTTP/${version}\r\n${lines}\r\n\r\n`);
      assert.match(res, /^HTTP\/1\.1 400 /, `${what} (HTTP/${version})`);
      assertErrorShape(answerOf(res), 400, 'bad_request', what);
      assert.match(res, /\r\nX-Request-Id: /, what);
    }
  }
  // Refused before authentication, as a missing Host is.
  const twoOnV1 = await raw(t.port, `GET /v1/inventory HTTP/1.1\r\nHost: a\r\nHost: b\r\nAuthorization: Bearer ${t.key}\r\n\r\n`);
  assertErrorShape(answerOf(twoOnV1), 400, 'bad_request', 'two Host lines under /v1 with a key');
  for (const host of ['inventory.example', 'inventory.example:8080', '127.0.0.1:8080', '[::1]:8080', '[::1]', 'x:', 'a%2Db', '']) {
    const res = await raw(t.port, `GET /healthz HTTP/1.1\r\nHost: ${host}\r\n\r\n`);
    assert.match(res, /^HTTP\/1\.1 200 /, `Host: ${host}`);
  }
});

wire.run();

const halfClose = appSuite('a client that closes its side after sending', { given: (t) => t.track(7, 3) });

halfClose('still gets the answer of its PATCH, after the commit', async ({ t }) => {
  // gzip makes the body arrive through zlib, asynchronously: the answer is not ready
  // at once, when the client's FIN arrives.
  const body = gzipSync('{"quantity": 4}');
  const head =
    `PATCH /v1/inventory/7 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.key}\r\nContent-Type: application/json\r\n` +
    `Content-Encoding: gzip\r\nContent-Length: ${body.length}\r\n\r\n`;
  const res = await raw(t.port, Buffer.concat([Buffer.from(head), body]));
  assert.match(res, /^HTTP\/1\.1 200 /);
  assert.is(bodyOf<ItemBody>(res).quantity, 4);
  assert.is((await t.events()).length, 2);
});

halfClose.run();
