// The two operations, through the HTTP app: every rule of the interface and of our
// decisions about GET and PATCH (see the README).
import * as assert from 'uvu/assert';
import { commandsOn } from '../kit/fixtures.ts';
import type { TestApp } from '../kit/app.ts';
import { assertErrorShape, type ErrorBody, type ItemBody, type Response } from '../kit/http.ts';
import { FRESH_MS, type StoreTarget } from '../kit/stores.ts';
import { appSuite } from '../kit/suites.ts';

const get = appSuite('GET /v1/inventory');

get('an empty inventory is [] with an ETag', async ({ t }) => {
  const res = await t.get();
  assert.is(res.status, 200);
  assert.match(String(res.headers['content-type']), /^application\/json/);
  assert.is(res.text, '[]');
  assert.match(String(res.headers.etag), /^"[^"]+"$/);
});

get('one entry per tracked pet, by petId ascending, ids above 2^53 exact and bare', async ({ t }) => {
  await t.track(9223372036854775807n, 1, 'sold');
  await t.track(30, 5);
  await t.track(9007199254740993n, 2, 'pending');
  await t.track(4, 0);
  const res = await t.get();
  assert.is(
    res.text,
    '[{"petId":4,"quantity":0,"status":"available"},' +
      '{"petId":30,"quantity":5,"status":"available"},' +
      '{"petId":9007199254740993,"quantity":2,"status":"pending"},' +
      '{"petId":9223372036854775807,"quantity":1,"status":"sold"}]',
  );
});

get('If-None-Match with the current tag is 304 without a body; any change changes the tag', async ({ t }) => {
  await t.track(1, 5);
  const first = await t.get();
  const tag = String(first.headers.etag);
  const unchanged = await t.get('/v1/inventory', { 'If-None-Match': tag });
  assert.is(unchanged.status, 304);
  assert.is(unchanged.text, '');
  assert.is(unchanged.headers.etag, tag);

  // A confirmed count (same quantity) is a change of the entry too.
  assert.is((await t.patch(1, { quantity: 5 })).status, 200);
  const second = await t.get('/v1/inventory', { 'If-None-Match': tag });
  assert.is(second.status, 200);
  assert.is.not(second.headers.etag, tag);
  assert.is(second.text, first.text);

  await t.track(2);
  const third = await t.get('/v1/inventory', { 'If-None-Match': String(second.headers.etag) });
  assert.is(third.status, 200);
  assert.is.not(third.headers.etag, second.headers.etag);
});

get('HEAD answers like GET without a body', async ({ t }) => {
  await t.track(1, 5);
  const res = await t.request({ method: 'HEAD', path: '/v1/inventory', headers: { Authorization: `Bearer ${t.key}` } });
  assert.is(res.status, 200);
  assert.is(res.text, '');
  assert.ok(res.headers.etag);
});

/** GET with If-None-Match: tag, asked again (every 5 ms) until the answer changes, within the target's bound. */
async function changed(t: TestApp, tag: string, target: StoreTarget): Promise<Response> {
  const bound = FRESH_MS[target.name];
  const started = performance.now();
  for (;;) {
    const res = await t.get('/v1/inventory', { 'If-None-Match': tag });
    if (res.status !== 304) return res;
    const waited = performance.now() - started;
    if (waited >= bound)
      assert.unreachable(`another process's commit did not show within ${bound} ms (still 304 after ${waited.toFixed(0)} ms)`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

get('the list held in memory sees writes of other processes: at once on SQLite, within 1.5 s on PostgreSQL', async ({ t, target }) => {
  const other = await target.open(t.db);
  try {
    await t.track(1, 5);
    const first = await t.get();
    assert.is(first.json<ItemBody[]>().length, 1);
    // Another connection (an operator command, a second service process) commits.
    const commands = commandsOn(other, Date.now);
    await commands.handle({ type: 'TrackPet', petId: 2n, quantity: 3, status: 'sold' }, { actor: 'cli:x', requestId: 'x' });
    const second = await changed(t, String(first.headers.etag), target);
    assert.is(second.status, 200);
    assert.is(second.text, '[{"petId":1,"quantity":5,"status":"available"},{"petId":2,"quantity":3,"status":"sold"}]');
    await commands.handle({ type: 'SetQuantity', petId: 2n, quantity: 3 }, { actor: 'cli:x', requestId: 'y' });
    const third = await changed(t, String(second.headers.etag), target);
    assert.is(third.status, 200, 'a confirmed count by another process changes the tag too');
  } finally {
    await other.close();
  }
});

get.run();

const patch = appSuite('PATCH /v1/inventory/{petId}', { given: (t) => t.track(7, 3) });

patch('sets the quantity, answers the entry with its version as ETag, appends one QuantitySet', async ({ t }) => {
  const res = await t.patch(7, { quantity: 12 }, { 'X-Request-Id': 'req-123' });
  assert.is(res.status, 200);
  assert.is(res.text, '{"petId":7,"quantity":12,"status":"available"}');
  assert.is(res.headers.etag, '"2"');
  assert.is(res.headers['x-request-id'], 'req-123');
  const events = await t.events();
  assert.is(events.length, 2);
  const last = events[1]!;
  assert.is(last.type, 'QuantitySet');
  assert.is(last.petId, 7n);
  assert.is(last.version, 2n);
  assert.equal(JSON.parse(String(last.data)), { quantity: 12, schemaVersion: 1 });
  assert.is(last.actor, 'tester');
  assert.is(last.requestId, 'req-123');
  assert.is(last.recordedAt, '2026-01-02T03:04:05.678Z');
  assert.is((await t.get()).text, '[{"petId":7,"quantity":12,"status":"available"}]');
});

patch('an unchanged quantity is still an event: a confirmed count', async ({ t }) => {
  assert.is((await t.patch(7, { quantity: 3 })).headers.etag, '"2"');
  assert.is((await t.patch(7, { quantity: 3 })).headers.etag, '"3"');
  assert.is((await t.events()).length, 3);
});

patch('the status is untouched: quantity and status are independent', async ({ t }) => {
  await t.track(8, 1, 'sold');
  const res = await t.patch(8, { quantity: 0 });
  assert.is(res.text, '{"petId":8,"quantity":0,"status":"sold"}');
});

patch('numbers are judged by value: 5.0 is 5, 1e3 is 1000, -0 is 0; bounds are inclusive', async ({ t }) => {
  for (const [raw, expected] of [
    ['5.0', 5],
    ['1e3', 1000],
    ['-0', 0],
    ['0', 0],
    ['2147483647', 2147483647],
    ['2147483647.0', 2147483647],
    ['1.5e1', 15],
    ['150e-1', 15],
    ['0.1e1', 1],
  ] as const) {
    const res = await t.patch(7, `{"quantity": ${raw}}`);
    assert.is(res.status, 200, raw);
    assert.is(res.json<ItemBody>().quantity, expected, raw);
  }
});

patch('the largest pet id works end to end, exact', async ({ t }) => {
  await t.track(9223372036854775807n, 1);
  const res = await t.patch('9223372036854775807', { quantity: 2 });
  assert.is(res.status, 200);
  assert.is(res.text, '{"petId":9223372036854775807,"quantity":2,"status":"available"}');
  await t.track(9007199254740993n);
  const near = await t.patch('9007199254740993', { quantity: 9 });
  assert.is(near.text, '{"petId":9007199254740993,"quantity":9,"status":"available"}');
  assert.is((await t.events()).at(-1)!.petId, 9007199254740993n);
});

patch('Content-Type with parameters is accepted', async ({ t }) => {
  const res = await t.patch(7, { quantity: 1 }, { 'Content-Type': 'application/json; charset=utf-8' });
  assert.is(res.status, 200);
});

patch('a well-formed id that is not tracked is 404 pet_not_found', async ({ t }) => {
  const res = await t.patch(8, { quantity: 1 });
  assert.is(res.status, 404);
  assert.equal(res.json(), { code: 'pet_not_found', message: 'pet 8 is not tracked', status: 404 });
  assert.is((await t.events()).length, 1);
});

patch.run();

const ifMatch = appSuite('PATCH with If-Match', { given: (t) => t.track(7, 3) });

ifMatch('the current version matches; a stale one is 412 and writes nothing', async ({ t }) => {
  assert.is((await t.patch(7, { quantity: 4 }, { 'If-Match': '"1"' })).status, 200);
  const stale = await t.patch(7, { quantity: 5 }, { 'If-Match': '"1"' });
  assertErrorShape(stale, 412, 'precondition_failed');
  assert.is((await t.events()).length, 2);
  assert.is((await t.get()).json<ItemBody[]>()[0]?.quantity, 4);
});

ifMatch('a list containing the version matches; * matches; a weak tag never does', async ({ t }) => {
  assert.is((await t.patch(7, { quantity: 4 }, { 'If-Match': '"9", "1"' })).status, 200);
  assert.is((await t.patch(7, { quantity: 4 }, { 'If-Match': '*' })).status, 200);
  assert.is((await t.patch(7, { quantity: 4 }, { 'If-Match': 'W/"3"' })).status, 412);
  assert.is((await t.patch(7, { quantity: 4 }, { 'If-Match': 'garbage' })).status, 412);
  assert.is((await t.events()).length, 3);
});

ifMatch('If-Match on a pet that is not tracked is 404', async ({ t }) => {
  const res = await t.patch(99, { quantity: 4 }, { 'If-Match': '"1"' });
  assert.is(res.status, 404);
});

ifMatch.run();

const weak = appSuite('a weak If-Match', { given: (t) => t.track(7, 3) });

weak('is 412 with a message that says weak tags never match, on PATCH and on GET of the entry', async ({ t }) => {
  const patched = await t.patch(7, { quantity: 4 }, { 'If-Match': 'W/"1"' });
  assert.is(patched.status, 412);
  assert.match(patched.json<ErrorBody>().message, /weak tags \(W\/"…"\) never match/);
  const read = await t.get('/v1/inventory/7', { 'If-Match': 'W/"1"' });
  assert.is(read.status, 412);
  assert.match(read.json<ErrorBody>().message, /weak tags \(W\/"…"\) never match/);
  // A strong tag that is stale says nothing of weak tags.
  assert.is.not((await t.patch(7, { quantity: 4 }, { 'If-Match': '"9"' })).json<ErrorBody>().message.includes('weak'), true);
  assert.is((await t.events()).length, 1);
});

weak.run();

const one = appSuite('GET /v1/inventory/{petId}', { given: (t) => t.track(7, 3) });

one('answers the entry with its version as ETag; that ETag makes the next If-Match PATCH succeed', async ({ t }) => {
  const res = await t.get('/v1/inventory/7');
  assert.is(res.status, 200);
  assert.match(String(res.headers['content-type']), /^application\/json/);
  assert.is(res.text, '{"petId":7,"quantity":3,"status":"available"}');
  assert.is(res.headers.etag, '"1"');
  const updated = await t.patch(7, { quantity: 5 }, { 'If-Match': String(res.headers.etag) });
  assert.is(updated.status, 200);
  assert.is(updated.headers.etag, '"2"');
  const again = await t.get('/v1/inventory/7');
  assert.is(again.headers.etag, '"2"');
  assert.is(again.json<ItemBody>().quantity, 5);
  assert.is((await t.events()).length, 2, 'reading writes nothing');
});

one('If-None-Match with the current tag is 304 without a body; an old tag gets the entry', async ({ t }) => {
  const unchanged = await t.get('/v1/inventory/7', { 'If-None-Match': '"1"' });
  assert.is(unchanged.status, 304);
  assert.is(unchanged.text, '');
  assert.is(unchanged.headers.etag, '"1"');
  assert.is((await t.get('/v1/inventory/7', { 'If-None-Match': 'W/"1"' })).status, 304, 'weak comparison');
  await t.patch(7, { quantity: 3 });
  const changed = await t.get('/v1/inventory/7', { 'If-None-Match': '"1"', 'Cache-Control': 'no-cache' });
  assert.is(changed.status, 200);
  assert.is(changed.headers.etag, '"2"');
});

one('HEAD answers like GET without a body', async ({ t }) => {
  const res = await t.request({ method: 'HEAD', path: '/v1/inventory/7', headers: { Authorization: `Bearer ${t.key}` } });
  assert.is(res.status, 200);
  assert.is(res.text, '');
  assert.is(res.headers.etag, '"1"');
  const missing = await t.request({ method: 'HEAD', path: '/v1/inventory/8', headers: { Authorization: `Bearer ${t.key}` } });
  assert.is(missing.status, 404);
});

one('not tracked: 404 pet_not_found; a malformed id: 400 invalid_pet_id; no key: 401', async ({ t }) => {
  assertErrorShape(await t.get('/v1/inventory/8'), 404, 'pet_not_found');
  assert.equal((await t.get('/v1/inventory/8')).json(), { code: 'pet_not_found', message: 'pet 8 is not tracked', status: 404 });
  for (const id of ['abc', '007', '0', '1.5', '9223372036854775808']) {
    assertErrorShape(await t.get(`/v1/inventory/${id}`), 400, 'invalid_pet_id', id);
  }
  assertErrorShape(await t.request({ path: '/v1/inventory/7' }), 401, 'unauthorized');
  // The id before the entry, the entry before the conditions.
  assertErrorShape(await t.get('/v1/inventory/8', { 'If-Match': '"1"' }), 404, 'pet_not_found');
  assertErrorShape(await t.get('/v1/inventory/abc', { 'If-Match': '"1"' }), 400, 'invalid_pet_id');
});

one('If-Match that does not match is 412 with the current ETag', async ({ t }) => {
  const res = await t.get('/v1/inventory/7', { 'If-Match': '"5"' });
  assertErrorShape(res, 412, 'precondition_failed');
  assert.is(res.headers.etag, '"1"');
  assert.is((await t.get('/v1/inventory/7', { 'If-Match': '"1"' })).status, 200);
});

one('the largest pet id reads back exact', async ({ t }) => {
  await t.track(9223372036854775807n, 2, 'sold');
  const res = await t.get('/v1/inventory/9223372036854775807');
  assert.is(res.text, '{"petId":9223372036854775807,"quantity":2,"status":"sold"}');
});

one.run();
