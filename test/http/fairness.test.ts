// Fair to every key: one key past its requests in flight, or past its change feed
// streams, is answered 429 too_many_requests with Retry-After, before any store work,
// while every other key is served; the key gets its place back once a request ends.
import * as assert from 'uvu/assert';
import { assertErrorShape } from '../kit/http.ts';
import { createKey } from '../kit/fixtures.ts';
import { stream } from '../kit/feed.ts';
import { appSuite } from '../kit/suites.ts';
import type { TestApp } from '../kit/app.ts';

/** Waits, a turn at a time and for at most 5 s, until check() holds. */
async function eventually(check: () => Promise<boolean>, what: string): Promise<void> {
  const until = Date.now() + 5000;
  while (!(await check())) {
    if (Date.now() > until) assert.unreachable(`${what} within 5 s`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const list = (t: TestApp, key: string) => t.get('/v1/inventory', { Authorization: `Bearer ${key}` });

function assertTooMany(res: { status: number; headers: Record<string, string | string[] | undefined> }, text: string, message: RegExp) {
  assertErrorShape({ status: res.status, headers: res.headers, text }, 429, 'too_many_requests');
  assert.is(res.headers['retry-after'], '1');
  assert.match(text, message);
}

// A stream is a request in flight for as long as it is open: three hold all of a key's places.
const inFlight = appSuite('fair to every key: requests in flight', { given: (t) => t.track(7, 3), app: { maxRequestsPerKey: 3 } });

inFlight('past its requests in flight a key alone gets 429 with Retry-After, and gets its place back', async ({ t }) => {
  const other = await createKey(t.store, 'other');
  const held = [await stream(t), await stream(t)];
  try {
    assert.is((await list(t, t.key)).status, 200, 'a third request while two are in flight');
    held.push(await stream(t));
    for (const s of held) assert.is(s.status, 200);
    const refused = await list(t, t.key);
    assertTooMany(refused, refused.text, /3 requests in flight/);
    const patch = await t.patch(7, { quantity: 5 });
    assertTooMany(patch, patch.text, /3 requests in flight/);
    assert.is((await list(t, other)).status, 200, 'another key is served');
    assert.is((await t.get('/healthz')).status, 200, 'health needs no key and is served');
  } finally {
    held[0]!.close();
  }
  await eventually(async () => (await list(t, t.key)).status === 200, "the key's place back once a stream closed");
  for (const s of held) s.close();
});

inFlight.run();

const streams = appSuite('fair to every key: change feed streams', { given: (t) => t.track(7, 3), app: { feed: { maxStreamsPerKey: 2 } } });

streams('past its streams a key alone gets 429; every other key still opens its own', async ({ t }) => {
  const other = await createKey(t.store, 'other');
  const held = [await stream(t), await stream(t)];
  try {
    for (const s of held) assert.is(s.status, 200);
    const third = await stream(t);
    assert.is(third.status, 429, 'a third stream of one key');
    assert.is(third.headers['retry-after'], '1');
    await third.ended;
    const others = [await stream(t, '', {}, other), await stream(t, '', {}, other)];
    held.push(...others);
    for (const s of others) assert.is(s.status, 200, "another key's streams");
    // Pages are not streams: the key still reads them.
    assert.is((await t.get('/v1/events')).status, 200);
    held[0]!.close();
    await eventually(async () => {
      const again = await stream(t);
      held.push(again);
      return again.status === 200;
    }, 'a stream of the key once one of its two closed');
  } finally {
    for (const s of held) s.close();
  }
});

streams.run();
