// A change feed stream's lifetime is not a request latency: a stream held open and then
// closed leaves the request-duration histogram as it was, where a JSON page of the same
// route is counted.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { startApp, type TestApp } from '../kit/app.ts';
import { seed, sleep, stream } from '../kit/feed.ts';

const HISTOGRAM = 'inventory_http_request_duration_seconds';

/** The histogram's lines for GET /v1/events: counts, sums and buckets. */
async function eventsSeries(t: TestApp): Promise<string[]> {
  const res = await t.get('/metrics');
  assert.is(res.status, 200);
  return res.text
    .split('\n')
    .filter((line) => line.startsWith(HISTOGRAM) && line.includes('route="/v1/events"'))
    .sort();
}

const test = suite<{ t: TestApp }>('the change feed in the metrics');
test.before.each(async (ctx) => {
  ctx.t = await startApp();
});
test.after.each(async (ctx) => {
  await ctx.t.close();
});

test('a stream held open and closed leaves the request-duration histogram unchanged', async ({ t }) => {
  await seed(t, 2, 3);
  assert.is((await t.get('/v1/events')).status, 200);
  const before = await eventsSeries(t);
  assert.ok(
    before.some((line) => line.startsWith(`${HISTOGRAM}_count{`) && line.endsWith(' 1')),
    `the JSON page is counted:\n${before.join('\n')}`,
  );
  const s = await stream(t);
  await s.waitFor((await t.events()).length);
  await sleep(1100);
  assert.equal(await eventsSeries(t), before, 'while the stream is open');
  s.close();
  for (let i = 0; i < 100 && t.feed.size() > 0; i++) await sleep(20);
  assert.is(t.feed.size(), 0, 'the service saw the stream close');
  assert.equal(await eventsSeries(t), before, 'after it closed');
});

test.run();
