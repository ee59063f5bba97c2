// Everything around the two operations: request ids, unknown paths, failures of the
// database (500 and 503 reveal nothing internal), the endpoints that need no key, the
// access log and its discretion, and the OpenAPI document as the one source.
import { readFileSync } from 'node:fs';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { ERROR_CODES } from '../../src/http/stages/errors.ts';
import { assertErrorShape, parseJson, type AccessLogLine, type ErrorBody } from '../kit/http.ts';
import { appSuite } from '../kit/suites.ts';

/** The parts of src/openapi.json these tests read. */
interface DocumentParts {
  components: {
    schemas: {
      ErrorCode: { enum: string[] };
      InventoryUpdate: {
        required: string[];
        additionalProperties: boolean;
        properties: { quantity: { type: string; minimum: number; maximum: number } };
      };
    };
  };
}

const ops = appSuite('request ids, unknown paths, failures', { given: (t) => t.track(7, 3) });

ops('a sane X-Request-Id is echoed and stored; anything else is replaced by a UUID', async ({ t }) => {
  const sane = 'Ab0._:-'.padEnd(128, 'z');
  const res = await t.patch(7, { quantity: 1 }, { 'X-Request-Id': sane });
  assert.is(res.headers['x-request-id'], sane);
  assert.is((await t.events()).at(-1)!.requestId, sane);
  for (const insane of ['a'.repeat(129), 'has space', 'semi;colon', 'ünï']) {
    const r = await t.patch(7, { quantity: 1 }, { 'X-Request-Id': encodeURI(insane) === insane ? insane : 'a/b' });
    assert.match(String(r.headers['x-request-id']), /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/, insane);
    assert.is((await t.events()).at(-1)!.requestId, r.headers['x-request-id']);
  }
  const generated = await t.get();
  assert.match(String(generated.headers['x-request-id']), /^[0-9a-f-]{36}$/);
  const error = await t.request({ path: '/nowhere', headers: { 'X-Request-Id': 'e-1' } });
  assert.is(error.headers['x-request-id'], 'e-1', 'errors echo it too');
});

ops('unknown paths are 404 not_found in the Error shape, with a key and without one outside /v1', async ({ t }) => {
  for (const res of [await t.get('/v1/pets'), await t.get('/v1/inventory/7/extra'), await t.request({ path: '/nowhere' })]) {
    assertErrorShape(res, 404, 'not_found');
  }
});

ops('an unexpected failure is 500 internal_error that reveals nothing; the log has the detail', async ({ t }) => {
  const gone = await t.faults().dropProjection();
  const res = await t.get('/v1/inventory', { 'X-Request-Id': 'boom-1' });
  assertErrorShape(res, 500, 'internal_error');
  assert.not.match(res.text, /inventory|SELECT|sqlite|postgres|at /i);
  assert.match(res.json<ErrorBody>().message, /boom-1/);
  assert.ok(t.logs.some((line) => line.includes('boom-1') && gone.driverMessage.test(line)));
  await gone.undo();
});

ops('a database that cannot take writes answers 503 unavailable and writes nothing', async ({ t }) => {
  const undo = await t.faults().readOnly();
  const res = await t.patch(7, { quantity: 9 });
  assertErrorShape(res, 503, 'unavailable');
  assert.is(res.headers['retry-after'], '1');
  await undo();
  assert.is((await t.events()).length, 1);
  assert.is((await t.patch(7, { quantity: 9 })).status, 200, 'recovers by itself');
});

ops.run();

const open = appSuite('endpoints without a key');

open('GET /openapi.json serves the document in the repository', async ({ t }) => {
  const res = await t.request({ path: '/openapi.json' });
  assert.is(res.status, 200);
  assert.match(String(res.headers['content-type']), /^application\/json/);
  assert.is(res.text, readFileSync(new URL('../../src/openapi.json', import.meta.url), 'utf8'));
});

open('GET /healthz is up; /readyz is ready, and 503 once the service shuts down', async ({ t }) => {
  assert.equal((await t.request({ path: '/healthz' })).json(), { status: 'ok' });
  // A store with a write-ahead log or connections adds what readiness shows of them; nothing else.
  const ready = await t.request({ path: '/readyz' });
  assert.is(ready.status, 200);
  const { storage, ...rest } = ready.json<{ status: string; storage?: Record<string, unknown> }>();
  assert.equal(rest, { status: 'ok' });
  const shown = t.store.diagnostics();
  if (shown.store === 'sqlite' && shown.wal !== undefined) {
    assert.equal(Object.keys(storage ?? {}).sort(), ['walBytes', 'walCheckpointBlockedForMs', 'walLimitBytes']);
  } else if (shown.store === 'postgres') {
    assert.equal(Object.keys(storage ?? {}).sort(), ['lastCommitSeenAgeSeconds', 'lastCommitSeenAt', 'notifications', 'pool']);
  } else assert.is(storage, undefined, 'no storage detail for a store without a log or connections');
  t.accepting = false;
  const res = await t.request({ path: '/readyz' });
  assertErrorShape(res, 503, 'unavailable');
  assert.is((await t.request({ path: '/healthz' })).status, 200);
});

open('a wrong method on them is 405 with Allow', async ({ t }) => {
  const res = await t.request({ method: 'POST', path: '/healthz' });
  assertErrorShape(res, 405, 'method_not_allowed');
  assert.is(res.headers.allow, 'GET, HEAD, OPTIONS');
});

open.run();

const logs = appSuite('the access log', { given: (t) => t.track(7, 3) });

logs('one JSON line per request with request id, actor, method, path, status and duration', async ({ t }) => {
  await t.patch(7, { quantity: 2 }, { 'X-Request-Id': 'log-1' });
  await new Promise((resolve) => setImmediate(resolve));
  const line = t.logs.map((l) => parseJson<AccessLogLine>(l)).find((l) => l.requestId === 'log-1');
  assert.ok(line, 'a line for the request');
  assert.is(line.actor, 'tester');
  assert.is(line.method, 'PATCH');
  assert.is(line.path, '/v1/inventory/7');
  assert.is(line.status, 200);
  assert.type(line.durationMs, 'number');
  assert.match(line.time, /^\d{4}-\d\d-\d\dT/);
});

logs('keys and Authorization headers never reach the log', async ({ t }) => {
  const revoked = await t.keys.create('gone', 'test');
  await t.keys.revoke('gone', 'test');
  for (const auth of [`Bearer ${t.key}`, `bearer ${revoked}`, 'Bearer pinv_guessguessguessguessguessguessgue', 'Basic dXNlcjpwYXNz']) {
    await t.request({ path: '/v1/inventory', headers: { Authorization: auth } });
    await t.request({
      method: 'PATCH',
      path: '/v1/inventory/7',
      headers: { Authorization: auth, 'Content-Type': 'application/json' },
      body: '{"quantity":1}',
    });
  }
  await new Promise((resolve) => setImmediate(resolve));
  const all = t.logs.join('\n');
  assert.ok(t.logs.length >= 8);
  for (const secret of [t.key, revoked, 'pinv_guess', 'dXNlcjpwYXNz', 'uthorization', 'Bearer']) {
    assert.not.ok(all.includes(secret), `the log holds ${secret.slice(0, 10)}…`);
  }
});

logs.run();

const doc = suite('the OpenAPI document');

doc('its ErrorCode enum is exactly the codes the service uses', () => {
  const openapi = parseJson<DocumentParts>(readFileSync(new URL('../../src/openapi.json', import.meta.url), 'utf8'));
  assert.equal(openapi.components.schemas.ErrorCode.enum, [...ERROR_CODES]);
});

doc('InventoryUpdate holds the bounds of the decisions: integer 0..2147483647, one member', () => {
  const openapi = parseJson<DocumentParts>(readFileSync(new URL('../../src/openapi.json', import.meta.url), 'utf8'));
  const update = openapi.components.schemas.InventoryUpdate;
  assert.equal(update.required, ['quantity']);
  assert.is(update.additionalProperties, false);
  assert.equal(
    { type: update.properties.quantity.type, minimum: update.properties.quantity.minimum, maximum: update.properties.quantity.maximum },
    { type: 'integer', minimum: 0, maximum: 2147483647 },
  );
});

doc.run();
