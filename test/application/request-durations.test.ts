// The request-duration histogram counts on its own, but /metrics must not tell: fed the
// same observations, it prints what prom-client's Histogram of the same name, help,
// labels and buckets prints, in both of the registry's formats, and resets as it does.
import { Histogram, Registry } from 'prom-client';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { requestDurations } from '../../src/application/health/request-durations.ts';

const NAME = 'inventory_http_request_duration_seconds';
const HELP = 'Time to an answer, by method, route template and status.';
const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** Observations in an order that makes new series appear between old ones: on each
 * bound, between bounds, above them all, and of no status. */
const OBSERVED: [string, string, number | undefined, number][] = [
  ['GET', '/v1/inventory', 200, 0.0004],
  ['PATCH', '/v1/inventory/:petId', 200, 0.001],
  ['GET', '/v1/inventory', 200, 0.001],
  ['GET', '/v1/inventory', 304, 0.0025],
  ['GET', 'unmatched', 404, 0.0026],
  ['PATCH', '/v1/inventory/:petId', 412, 10],
  ['GET', '/v1/inventory', 200, 12.5],
  ['GET', '/v1/events', undefined, 0.3],
  ['PATCH', '/v1/inventory/:petId', 200, 0],
  ['GET', '/v1/inventory', 200, 0.75],
  ['GET', 'unmatched', 404, 5],
];

function both(contentType?: typeof Registry.OPENMETRICS_CONTENT_TYPE) {
  const ours = new Registry();
  const theirs = new Registry();
  // The registry's types fix its format when it is made; both formats are tried here.
  if (contentType) for (const registry of [ours, theirs]) (registry as unknown as Registry<typeof contentType>).setContentType(contentType);
  const durations = requestDurations({ name: NAME, help: HELP, buckets: BUCKETS, registers: [ours] });
  const histogram = new Histogram({
    name: NAME,
    help: HELP,
    labelNames: ['method', 'route', 'status'],
    buckets: BUCKETS,
    registers: [theirs],
  });
  const observe = (method: string, route: string, status: number | undefined, seconds: number) => {
    durations.observe(method, route, status, seconds);
    histogram.observe({ method, route, status: status === undefined ? 'none' : String(status) }, seconds);
  };
  return { ours, theirs, observe };
}

test('the page is the one prom-client prints for the same observations', async () => {
  for (const contentType of [undefined, Registry.OPENMETRICS_CONTENT_TYPE]) {
    const { ours, theirs, observe } = both(contentType);
    assert.is(await ours.metrics(), await theirs.metrics(), 'no observation yet');
    for (const [i, observation] of OBSERVED.entries()) {
      observe(...observation);
      assert.is(await ours.metrics(), await theirs.metrics(), `after observation ${i}`);
    }
    assert.match(await ours.metrics(), `${NAME}_bucket{le="+Inf",method="GET",route="/v1/events",status="none"} 1`);
  }
});

test('a reset empties it as it empties prom-client, and counting starts again', async () => {
  const { ours, theirs, observe } = both();
  for (const observation of OBSERVED) observe(...observation);
  ours.resetMetrics();
  theirs.resetMetrics();
  assert.is(await ours.metrics(), await theirs.metrics());
  assert.not.match(await ours.metrics(), '_count');
  observe('GET', '/v1/inventory', 200, 0.002);
  observe('GET', '/v1/inventory', 200, 0.003);
  assert.is(await ours.metrics(), await theirs.metrics());
  assert.match(await ours.metrics(), `${NAME}_count{method="GET",route="/v1/inventory",status="200"} 2`);
});

test.run();
