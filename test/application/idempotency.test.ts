// Safe retries: a PATCH with an Idempotency-Key is carried out once; the same request
// again gets the stored answer (Idempotent-Replayed: true) and appends nothing, on every
// store. The precedence of its answers, what is stored and what leaves the key free,
// expiry, and the same key sent many times at once.
import { connect } from 'node:net';
import fc from 'fast-check';
import * as assert from 'uvu/assert';
import { suite } from 'uvu';
import { readConfig } from '../../src/config.ts';
import { expireIdempotency } from '../../src/application/write/idempotency-expiry.ts';
import { makeMetrics } from '../../src/application/health/metrics.ts';
import type { Idempotent } from '../../src/application/write/command-result.ts';
import { makeCommandHandler } from '../../src/application/write/commands.ts';
import { assertErrorShape, send, type ErrorBody } from '../kit/http.ts';
import { createKey } from '../kit/fixtures.ts';
import type { TestApp } from '../kit/app.ts';
import { defaultTarget } from '../kit/stores.ts';
import { appSuite } from '../kit/suites.ts';

const retries = appSuite('Idempotency-Key on PATCH');

const keyed = (key: string, more: Record<string, string> = {}) => ({ 'Idempotency-Key': key, ...more });

retries('the same request again replays the stored answer and appends nothing, whatever happened since', async ({ t }) => {
  await t.track(1, 5);
  const first = await t.patch(1, { quantity: 7 }, keyed('order-1'));
  assert.is(first.status, 200);
  assert.is(first.headers['idempotent-replayed'], undefined);
  assert.is(first.headers.etag, '"2"');
  // Another write to the pet: the replay is still the first answer.
  assert.is((await t.patch(1, { quantity: 9 })).status, 200);
  const again = await t.patch(1, { quantity: 7.0 }, keyed('order-1'));
  assert.is(again.status, 200);
  assert.is(again.headers['idempotent-replayed'], 'true');
  assert.is(again.headers.etag, '"2"');
  assert.is(again.text, first.text);
  assert.match(String(again.headers['content-type']), /^application\/json/);
  const quantitySets = (await t.events()).filter((e) => e.type === 'QuantitySet');
  assert.is(quantitySets.length, 2, 'the first request and the write without a key');
  // The quoted form names the same key, and a percent-encoded digit the same path.
  const quoted = await t.patch(1, { quantity: 7 }, keyed('"order-1"'));
  assert.is(quoted.headers['idempotent-replayed'], 'true');
  const encoded = await t.patch('%31', { quantity: 7 }, keyed('order-1'));
  assert.is(encoded.headers['idempotent-replayed'], 'true');
});

retries('without the header every PATCH appends', async ({ t }) => {
  await t.track(1, 5);
  await t.patch(1, { quantity: 7 });
  await t.patch(1, { quantity: 7 });
  assert.is((await t.events()).length, 3);
});

retries('If-Match retried after its success replays the 200, not a 412 for its own write', async ({ t }) => {
  await t.track(1, 5);
  const headers = keyed('with-if-match', { 'If-Match': '"1"' });
  const first = await t.patch(1, { quantity: 6 }, headers);
  assert.is(first.status, 200);
  const retry = await t.patch(1, { quantity: 6 }, headers);
  assert.is(retry.status, 200);
  assert.is(retry.headers['idempotent-replayed'], 'true');
  assert.is(retry.text, first.text);
  // Without the key the same retry is the 412 a client would wrongly take for a conflict.
  assert.is((await t.patch(1, { quantity: 6 }, { 'If-Match': '"1"' })).status, 412);
  assert.is((await t.events()).length, 2);
});

retries('a 404 and a 412 are stored and replayed before the entry is looked at', async ({ t }) => {
  const missing = await t.patch(2, { quantity: 1 }, keyed('k404'));
  assert.is(missing.status, 404);
  await t.track(2, 0);
  const replayed = await t.patch(2, { quantity: 1 }, keyed('k404'));
  assert.is(replayed.status, 404);
  assert.is(replayed.headers['idempotent-replayed'], 'true');
  assert.is(replayed.text, missing.text);
  assertErrorShape(replayed, 404, 'pet_not_found');

  const stale = await t.patch(2, { quantity: 3 }, keyed('k412', { 'If-Match': '"7"' }));
  assert.is(stale.status, 412);
  assert.is(stale.headers.etag, '"1"');
  await t.patch(2, { quantity: 4 });
  const again = await t.patch(2, { quantity: 3 }, keyed('k412', { 'If-Match': '"7"' }));
  assert.is(again.status, 412);
  assert.is(again.headers['idempotent-replayed'], 'true');
  assert.is(again.headers.etag, '"1"', 'the stored ETag, not the current one');
  assert.is(again.text, stale.text);
  assert.is((await t.events()).length, 2);
});

retries('another body, precondition or pet under one key is 422 and writes nothing; another API key is another key', async ({ t }) => {
  await t.track(1, 5);
  await t.track(2, 5);
  assert.is((await t.patch(1, { quantity: 7 }, keyed('k'))).status, 200);
  const otherBody = await t.patch(1, { quantity: 8 }, keyed('k'));
  assert.is(otherBody.status, 422);
  assert.equal(otherBody.json<ErrorBody>(), {
    code: 'idempotency_key_reused',
    message: otherBody.json<ErrorBody>().message,
    status: 422,
  });
  assert.is((await t.patch(1, { quantity: 7 }, keyed('k', { 'If-Match': '*' }))).status, 422);
  // Keys are scoped to the API key; the path is in the fingerprint.
  assertErrorShape(await t.patch(2, { quantity: 7 }, keyed('k')), 422, 'idempotency_key_reused', 'the same key on another pet');
  assert.is((await t.patch(2, { quantity: 7 }, keyed('k'))).status, 422, 'and again');
  const other = await createKey(t.store, 'other');
  const byOther = await t.patch(2, { quantity: 7 }, { ...keyed('k'), Authorization: `Bearer ${other}` });
  assert.is(byOther.status, 200);
  assert.is(byOther.headers['idempotent-replayed'], undefined, 'the API key is part of the scope');
  assert.equal(
    (await t.events()).map((e) => [e.petId, e.type]),
    [
      [1n, 'PetTracked'],
      [2n, 'PetTracked'],
      [1n, 'QuantitySet'],
      [2n, 'QuantitySet'],
    ],
  );
});

retries('precedence: a bad key is a 400 judged with the body, after the media type and the path id', async ({ t }) => {
  await t.track(1, 5);
  const bad = keyed('has space');
  // The body's own 400 comes first, then the key's, before 404 and 412.
  assertErrorShape(await t.patch(1, { quantity: -1 }, bad), 400, 'invalid_body');
  assertErrorShape(await t.patch(9, { quantity: 1 }, bad), 400, 'invalid_idempotency_key', 'an untracked pet');
  assertErrorShape(await t.patch(1, { quantity: 1 }, { ...bad, 'If-Match': '"9"' }), 400, 'invalid_idempotency_key', 'a stale If-Match');
  assertErrorShape(await t.patch('abc', { quantity: 1 }, bad), 400, 'invalid_pet_id');
  assert.is((await t.patch(1, { quantity: 1 }, { ...bad, 'Content-Type': 'text/plain' })).status, 415);
  assert.is((await t.patch(1, { quantity: 1 }, { ...bad, Authorization: 'Bearer nope' })).status, 401);
  assert.is((await t.events()).length, 1);
});

retries('answers that are not stored (400, 401, 413, 415, 503) leave the key free', async ({ t }) => {
  await t.track(1, 5);
  assert.is((await t.patch(1, { quantity: 'x' }, keyed('free'))).status, 400);
  assert.is((await t.patch(1, `{"quantity": 1${' '.repeat(5000)}}`, keyed('free'))).status, 413);
  assert.is((await t.patch(1, { quantity: 1 }, { ...keyed('free'), 'Content-Type': 'text/plain' })).status, 415);
  assert.is((await t.patch(1, { quantity: 1 }, { ...keyed('free'), Authorization: 'Bearer nope' })).status, 401);
  const undo = await t.faults().readOnly();
  try {
    assert.is((await t.patch(1, { quantity: 2 }, keyed('free'))).status, 503);
  } finally {
    await undo();
  }
  const done = await t.patch(1, { quantity: 3 }, keyed('free'));
  assert.is(done.status, 200);
  assert.is(done.headers['idempotent-replayed'], undefined);
  assert.is((await t.events()).length, 2);
});

retries('a retry after the connection was cut past the commit replays the answer it lost', async ({ t }) => {
  await t.track(1, 5);
  const body = '{"quantity":11}';
  // The request goes out whole and the client leaves without reading its answer.
  await new Promise<void>((resolve, reject) => {
    const socket = connect(t.port, '127.0.0.1', () => {
      socket.end(
        `PATCH /v1/inventory/1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.key}\r\nContent-Type: application/json\r\n` +
          `Idempotency-Key: lost-answer\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
      );
      socket.destroy();
      resolve();
    });
    socket.on('error', reject);
  });
  for (let i = 0; i < 200 && (await t.events()).length < 2; i++) await new Promise((r) => setTimeout(r, 10));
  assert.is((await t.events()).length, 2, 'the first request was committed');
  const retry = await t.patch(1, { quantity: 11 }, keyed('lost-answer'));
  assert.is(retry.status, 200);
  assert.is(retry.headers['idempotent-replayed'], 'true');
  assert.is(retry.headers.etag, '"2"');
  assert.is((await t.events()).length, 2);
});

retries('the same key sent many times at once: one event, the others replays or 409', async ({ t }) => {
  await t.track(1, 5);
  const answers = await Promise.all(Array.from({ length: 20 }, () => t.patch(1, { quantity: 3 }, keyed('storm'))));
  const appended = answers.filter((r) => r.status === 200 && r.headers['idempotent-replayed'] === undefined);
  assert.is(appended.length, 1);
  for (const r of answers) {
    if (r.status === 409) {
      assertErrorShape(r, 409, 'idempotency_key_in_flight');
      assert.is(r.headers['retry-after'], '1');
    } else assert.is(r.status, 200);
  }
  assert.is((await t.events()).length, 2);
});

async function sameBatch({ t }: { t: TestApp }): Promise<void> {
  await t.track(1, 5);
  const commands = makeCommandHandler({ store: t.store, now: Date.now });
  const idempotent: Idempotent = {
    scope: { apiKey: 'tester', key: 'same-batch' },
    path: '/v1/inventory/1',
    fingerprint: 'f',
    answers: {
      applied: (entry) => ({ status: 200, etag: `"${entry.version}"`, body: 'stored' }),
      refused: (refusal) => {
        throw new Error(`unexpected refusal: ${refusal.reason}`);
      },
    },
  };
  const meta = { actor: 'tester', requestId: 'r' };
  // Submitted in one turn of the event loop: one batch.
  const [first, second] = await Promise.all([
    commands.handle({ type: 'SetQuantity', petId: 1n, quantity: 8 }, meta, idempotent),
    commands.handle({ type: 'SetQuantity', petId: 1n, quantity: 8 }, meta, idempotent),
  ]);
  assert.is(first.kind, 'applied');
  if (second.kind !== 'replayed') return assert.unreachable(`the second was ${second.kind}`);
  assert.is(second.record.body, 'stored');
  assert.is(second.record.etag, '"2"');
  assert.is((await t.events()).length, 2);
}

retries('two submissions with one key in one batch: the second replays the first', sameBatch);

retries('records expire after the TTL: the key is free again, and expiry removes them in steps', async ({ t }) => {
  await t.track(1, 5);
  assert.is((await t.patch(1, { quantity: 1 }, keyed('a'))).status, 200);
  assert.is((await t.patch(1, { quantity: 2 }, keyed('b'))).status, 200);
  t.tick(23 * 3600_000);
  assert.is((await t.patch(1, { quantity: 9 }, keyed('a'))).status, 422, 'still kept after 23 hours');
  t.tick(3600_000);
  const reusedLater = await t.patch(1, { quantity: 9 }, keyed('a'));
  assert.is(reusedLater.status, 200, 'expired: a new request');
  assert.is(reusedLater.headers['idempotent-replayed'], undefined);
  assert.is(await t.store.idempotency.count(), 2);
  const at = new Date(Date.parse('2026-01-02T03:04:05.678Z') + 25 * 3600_000).toISOString();
  assert.is(await t.store.idempotency.expire(at, 5), 1, 'only "b" expired ("a" was stored again)');
  assert.is(await t.store.idempotency.expire(at, 5), 0);
  assert.is(await t.store.idempotency.count(), 1);
  assert.is((await t.events()).length, 4);
});

retries('/metrics shows the table size and the replays, never a key', async ({ t }) => {
  await t.track(1, 5);
  await t.patch(1, { quantity: 1 }, keyed('secret-looking-key'));
  await t.patch(1, { quantity: 1 }, keyed('secret-looking-key'));
  await t.patch(1, { quantity: 2 }, keyed('secret-looking-key'));
  const page = (await send(t.port, { path: '/metrics' })).text;
  assert.match(page, /^inventory_idempotency_records 1$/m);
  assert.match(page, /^inventory_idempotency_requests_total\{outcome="replayed"\} 1$/m);
  assert.match(page, /^inventory_idempotency_requests_total\{outcome="reused"\} 1$/m);
  assert.not.match(page, /secret-looking-key/);
});

retries('fuzzing the header: a valid key is carried out once, anything else is 400 and writes nothing', async ({ t }) => {
  await t.track(1, 5);
  const visible = fc.string({
    unit: fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c)),
    minLength: 1,
    maxLength: 255,
  });
  const anyHeader = fc.string({ unit: fc.integer({ min: 0x09, max: 0xff }).map((c) => String.fromCharCode(c)), maxLength: 300 });
  let events = (await t.events()).length;
  await fc.assert(
    fc.asyncProperty(
      fc.oneof(
        visible,
        anyHeader,
        visible.map((v) => `"${v}"`),
      ),
      async (header) => {
        // What an HTTP client can send: no control character but the tab, no white space
        // at the ends (it is not part of the value).
        const control = [...header].some((c) => (c < ' ' && c !== '\t') || c === '\x7f');
        if (control || header !== header.trim() || header === '') return;
        const res = await t.patch(1, { quantity: 1 }, keyed(header));
        const bare = /^[\x21-\x7e]{1,255}$/.test(header) && !header.startsWith('"');
        const quoted = /^"[\x21\x23-\x5b\x5d-\x7e]{1,255}"$/.test(header);
        if (bare || quoted) {
          assert.is(res.status, 200, header);
          if (res.headers['idempotent-replayed'] === undefined) events++;
          const again = await t.patch(1, { quantity: 1 }, keyed(header));
          assert.is(again.headers['idempotent-replayed'], 'true');
        } else {
          assertErrorShape(res, 400, 'invalid_idempotency_key', header);
        }
        assert.is((await t.events()).length, events);
      },
    ),
    { numRuns: 60 },
  );
});

retries('a repeated header is refused', async ({ t }) => {
  await t.track(1, 5);
  const res = await send(t.port, {
    method: 'PATCH',
    path: '/v1/inventory/1',
    headers: { Authorization: `Bearer ${t.key}`, 'Content-Type': 'application/json', 'Idempotency-Key': ['a', 'b'] as unknown as string },
    body: '{"quantity":1}',
  });
  assertErrorShape(res, 400, 'invalid_idempotency_key');
});

retries('expiry runs in steps of a few rows until nothing expired is left', async ({ t }) => {
  await t.track(1, 5);
  for (let i = 0; i < 5; i++) assert.is((await t.patch(1, { quantity: i }, keyed(`step-${i}`))).status, 200);
  t.tick(24 * 3600_000);
  const steps: number[] = [];
  const counting = {
    expire: async (at: string, limit: number) => {
      const removed = await t.store.idempotency.expire(at, limit);
      steps.push(removed);
      return removed;
    },
  };
  assert.is(await expireIdempotency(counting, () => Date.parse('2026-01-03T03:04:05.678Z'), 2), 5);
  assert.equal(steps, [2, 2, 1]);
  assert.is(await t.store.idempotency.count(), 0);
});

retries.run();

const shortLived = appSuite('Idempotency-Key with IDEMPOTENCY_TTL_HOURS=1', { app: { idempotencyTtlMs: 3600_000 } });
shortLived('the key is free again after the configured TTL', async ({ t }) => {
  await t.track(1, 5);
  assert.is((await t.patch(1, { quantity: 1 }, keyed('hour'))).status, 200);
  t.tick(3600_000 - 1);
  assert.is((await t.patch(1, { quantity: 2 }, keyed('hour'))).status, 422);
  t.tick(1);
  assert.is((await t.patch(1, { quantity: 2 }, keyed('hour'))).status, 200);
});
shortLived.run();

const config = suite('IDEMPOTENCY_TTL_HOURS in the configuration');
config('24 hours unless set; whole hours from 1 to 8760, anything else refused', () => {
  assert.is(readConfig({}).idempotencyTtlMs, 24 * 3600_000);
  assert.is(readConfig({ IDEMPOTENCY_TTL_HOURS: '48' }).idempotencyTtlMs, 48 * 3600_000);
  for (const bad of ['0', '1.5', 'abc', '', '8761', '-1']) {
    assert.throws(() => readConfig({ IDEMPOTENCY_TTL_HOURS: bad }), /IDEMPOTENCY_TTL_HOURS must be a whole number of hours/, bad);
  }
});
config.run();

// The writer thread sends the store's answer back as data: the key's record must cross.
const threaded = appSuite('Idempotency-Key through the writer thread', { app: { writer: 'thread' } }, [defaultTarget()]);
threaded('two submissions with one key in one batch: the second replays the first', sameBatch);
threaded('expiry runs on the writer thread', async ({ t }) => {
  await t.track(1, 5);
  assert.is((await t.patch(1, { quantity: 1 }, keyed('threaded'))).status, 200);
  const at = new Date(Date.parse('2026-01-03T03:04:05.678Z') + 1).toISOString();
  assert.is(await t.store.idempotency.expire(at, 10), 1);
  assert.is(await t.store.idempotency.count(), 0);
});
threaded.run();

const gauge = suite('the records gauge while the database is unavailable');
gauge('a storage fault keeps the last value and the page; any other failure is not hidden', async () => {
  let failure: Error | undefined;
  const store = {
    diagnostics: () => ({ store: 'sqlite' as const, wal: undefined }),
    fault: (error: unknown) =>
      (error as { code?: string }).code === 'ECONNREFUSED' ? { kind: 'storage' as const, code: 'ECONNREFUSED' } : undefined,
    idempotency: {
      count: () => (failure ? Promise.reject(failure) : Promise.resolve(3)),
      find: () => Promise.resolve(undefined),
      expire: () => Promise.resolve(0),
      unexpired: async function* () {},
    },
  };
  const { registry } = makeMetrics({ store });
  assert.match(await registry.metrics(), /^inventory_idempotency_records 3$/m);
  failure = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
  assert.match(await registry.metrics(), /^inventory_idempotency_records 3$/m);
  failure = new Error('a bug');
  try {
    await registry.metrics();
    assert.unreachable('a failure that is not a storage fault fails the scrape');
  } catch (error) {
    assert.is((error as Error).message, 'a bug');
  }
});
gauge.run();
