// GET /metrics: Prometheus text without a key, with the request, commit, cache and
// storage metrics, and with nothing in it that identifies a pet, a key or a request.
import { spawnSync } from 'node:child_process';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { assertErrorShape } from '../kit/http.ts';
import { tempDir } from '../kit/paths.ts';
import { sample } from '../kit/prometheus.ts';
import { startService } from '../kit/service.ts';
import { needing, tools } from '../kit/tools.ts';
import { appSuite } from '../kit/suites.ts';

/** A big id: its digits cannot be mistaken for a count or a bucket bound. */
const PET = 9007199254740993n;
const OTHER = 4815162342n;

const metrics = appSuite('GET /metrics', {
  given: async (t) => {
    await t.track(PET, 3);
    await t.track(OTHER, 5);
  },
});

metrics('answers without a key, in the Prometheus text format, never cached', async ({ t }) => {
  const res = await t.request({ path: '/metrics' });
  assert.is(res.status, 200);
  assert.match(String(res.headers['content-type']), /^text\/plain; version=0\.0\.4; charset=utf-8$/);
  assert.is(res.headers['cache-control'], 'no-store');
  for (const name of [
    'inventory_http_request_duration_seconds',
    'inventory_commit_batch_size',
    'inventory_commit_duration_seconds',
    'inventory_events_appended_total',
    'inventory_storage_faults_total',
    'inventory_list_renders_total',
    'inventory_list_cache_hits_total',
  ]) {
    assert.match(res.text, new RegExp(`^# TYPE ${name} (histogram|counter)$`, 'm'), name);
  }
});

metrics('requests are counted by method, route template and status', async ({ t }) => {
  assert.is((await t.patch(PET, { quantity: 8 })).status, 200);
  assert.is((await t.patch(OTHER, { quantity: 1 })).status, 200);
  assert.is((await t.patch(12345, { quantity: 1 })).status, 404);
  assert.is((await t.request({ path: '/v1/inventory' })).status, 401);
  assert.is((await t.get()).status, 200);
  assert.is((await t.request({ path: '/no/such/path/777' })).status, 404);
  const text = (await t.request({ path: '/metrics' })).text;
  const count = (labels: string) => sample(text, 'inventory_http_request_duration_seconds_count', labels);
  assert.is(count('method="PATCH",route="/v1/inventory/:petId",status="200"'), 2);
  assert.is(count('method="PATCH",route="/v1/inventory/:petId",status="404"'), 1);
  assert.is(count('method="GET",route="/v1/inventory",status="401"'), 1, 'a 401 is still the route it asked for');
  assert.is(count('method="GET",route="/v1/inventory",status="200"'), 1);
  assert.is(count('method="GET",route="unmatched",status="404"'), 1, 'an unknown path is one label, not its path');
  assert.is(
    sample(text, 'inventory_http_request_duration_seconds_bucket', 'le="+Inf",method="PATCH",route="/v1/inventory/:petId",status="200"'),
    2,
  );
});

metrics('commits: batch sizes, durations and the events appended by type', async ({ t }) => {
  const before = (await t.request({ path: '/metrics' })).text;
  const appended = (text: string) => sample(text, 'inventory_events_appended_total', 'type="QuantitySet"') ?? 0;
  const batches = (text: string) => sample(text, 'inventory_commit_batch_size_count') ?? 0;
  const submissions = (text: string) => sample(text, 'inventory_commit_batch_size_sum') ?? 0;
  // Sent together: group commit takes them in one or more batches.
  const answers = await Promise.all([1, 2, 3, 4, 5, 6].map((q) => t.patch(q % 2 ? PET : OTHER, { quantity: q })));
  assert.ok(answers.every((r) => r.status === 200));
  const after = (await t.request({ path: '/metrics' })).text;
  assert.is(appended(after) - appended(before), 6);
  assert.is(submissions(after) - submissions(before), 6, 'every submission is in a batch');
  const made = batches(after) - batches(before);
  assert.ok(made >= 1 && made <= 6, `${made} batches`);
  assert.is(sample(after, 'inventory_commit_duration_seconds_count'), batches(after));
  assert.ok(sample(after, 'inventory_commit_duration_seconds_sum')! > 0);
});

metrics('the list cache: a render after a change, hits while nothing changed', async ({ t }) => {
  const value = async (name: string) => sample((await t.request({ path: '/metrics' })).text, name) ?? 0;
  assert.is((await t.get()).status, 200);
  const renders = await value('inventory_list_renders_total');
  const hits = await value('inventory_list_cache_hits_total');
  assert.is((await t.get()).status, 200);
  assert.is((await t.get()).status, 200);
  assert.is(await value('inventory_list_renders_total'), renders);
  assert.is(await value('inventory_list_cache_hits_total'), hits + 2);
  assert.is((await t.patch(PET, { quantity: 40 })).status, 200);
  assert.is((await t.get()).status, 200);
  assert.is(await value('inventory_list_renders_total'), renders + 1);
  // Five at once after a change: one renders, the others share it or find it done.
  assert.is((await t.patch(PET, { quantity: 41 })).status, 200);
  const [r0, h0] = [await value('inventory_list_renders_total'), await value('inventory_list_cache_hits_total')];
  const answers = await Promise.all([1, 2, 3, 4, 5].map(() => t.get()));
  assert.ok(answers.every((r) => r.status === 200));
  assert.is(await value('inventory_list_renders_total'), r0 + 1);
  assert.is(await value('inventory_list_cache_hits_total'), h0 + 4, 'every GET is a render or a hit');
});

metrics('a storage fault is counted by kind', async ({ t }) => {
  const undo = await t.faults().readOnly();
  try {
    assertErrorShape(await t.patch(PET, { quantity: 9 }), 503, 'unavailable');
  } finally {
    await undo();
  }
  const text = (await t.request({ path: '/metrics' })).text;
  assert.is(sample(text, 'inventory_storage_faults_total', 'kind="storage"'), 1);
  assert.is(sample(text, 'inventory_storage_faults_total', 'kind="contention"'), 0);
});

metrics('the store gauges: the log on SQLite, the connection pool on PostgreSQL', async ({ t, target }) => {
  assert.is((await t.patch(PET, { quantity: 2 })).status, 200);
  const text = (await t.request({ path: '/metrics' })).text;
  if (target.name === 'sqlite') {
    assert.ok(sample(text, 'inventory_wal_bytes')! >= 0, 'the log size is shown');
    assert.is(sample(text, 'inventory_oldest_reader_seconds'), 0, 'no reader holds the log back');
    assert.not.match(text, /inventory_db_pool_connections\{/);
  } else {
    assert.ok(sample(text, 'inventory_db_pool_connections', 'state="idle"')! >= 1);
    assert.is(sample(text, 'inventory_db_pool_connections', 'state="waiting"'), 0);
    assert.not.match(text, /^inventory_wal_bytes /m);
  }
});

metrics('no pet id, key, key name, request id or path of a client appears in it', async ({ t }) => {
  const requestId = 'req-identifies-me-0451';
  assert.is((await t.patch(PET, { quantity: 11 }, { 'X-Request-Id': requestId })).status, 200);
  assert.is((await t.patch(OTHER, { quantity: 0 }, { 'X-Request-Id': requestId })).status, 200);
  assert.is((await t.get('/v1/inventory/secret-path-segment')).status, 400);
  assert.is((await t.get(`/v1/inventory/${PET}`)).status, 200, 'reading one entry is labelled by its route, not its id');
  assert.is(
    (await t.request({ path: '/v1/inventory', headers: { Authorization: 'Bearer pinv_wrongwrongwrongwrongwrongwrong12' } })).status,
    401,
  );
  assert.is((await t.request({ path: '/v1/inventory', method: 'BREW' })).status >= 400, true);
  const text = (await t.request({ path: '/metrics' })).text;
  for (const secret of [String(PET), String(OTHER), t.key, 'tester', requestId, 'secret-path-segment', 'wrongwrong', 'BREW']) {
    assert.not.ok(text.includes(secret), `${secret.slice(0, 12)}… must not appear`);
  }
});

const process = suite('GET /metrics of the service process');

process('the service adds the process metrics of prom-client', async () => {
  const dir = tempDir('metrics-');
  const service = await startService({ db: dir.path('inventory.db'), expectKey: true });
  try {
    const res = await service.get('/metrics');
    assert.is(res.status, 200);
    for (const name of [
      'process_cpu_user_seconds_total',
      'process_resident_memory_bytes',
      'nodejs_eventloop_lag_p99_seconds',
      'nodejs_heap_size_used_bytes',
    ]) {
      assert.match(res.text, new RegExp(`^${name} `, 'm'), name);
    }
    assert.match(res.text, /^inventory_wal_bytes \d+$/m, 'the writer thread reports the log too');
  } finally {
    await service.stop();
    dir.cleanup();
  }
});

// Monitoring pipelines gate on promtool's lint: a non-counter named `…_total` fails it.
needing(process, [tools.promtool])('the page of a started service passes `promtool check metrics`', async () => {
  const dir = tempDir('metrics-promtool-');
  const service = await startService({ db: dir.path('inventory.db'), expectKey: true });
  try {
    await service.get('/v1/inventory', service.bootstrapKey);
    const res = await service.get('/metrics');
    assert.is(res.status, 200);
    const lint = spawnSync('/usr/bin/promtool', ['check', 'metrics'], { input: res.text, encoding: 'utf8', timeout: 30_000 });
    assert.is(lint.status, 0, `promtool check metrics:\n${lint.stdout}${lint.stderr}`);
  } finally {
    await service.stop();
    dir.cleanup();
  }
});

metrics.run();
process.run();
