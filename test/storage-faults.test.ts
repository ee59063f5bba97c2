// Storage faults: a full disk (SQLite's max_page_count stands in for it) or a read-only
// database. Writes answer 503 in the Error shape, nothing is half-written, /readyz says
// not ready, and the service recovers by itself once the fault is gone.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { rebuildProjection } from '../src/rebuild.ts';
import { startApp, type ErrorBody, type TestApp } from './helpers.ts';

const faults = suite<{ t: TestApp; dir: string }>('storage faults', { t: undefined as unknown as TestApp, dir: '' });
faults.before.each(async (ctx) => {
  ctx.dir = mkdtempSync(join(tmpdir(), 'inv-faults-'));
  ctx.t = await startApp(join(ctx.dir, 'inventory.db'));
  await ctx.t.track(7, 3);
});
faults.after.each(async (ctx) => {
  await ctx.t.close();
  rmSync(ctx.dir, { recursive: true, force: true });
});

async function readiness(t: TestApp): Promise<number> {
  return (await t.request({ path: '/readyz' })).status;
}

faults('a full disk: 503, nothing half-written, not ready, and ready again by itself when space returns', async ({ t }) => {
  assert.is(await readiness(t), 200);
  t.db.pragma(`max_page_count = ${t.db.pragma('page_count', { simple: true }) as number}`);
  let acknowledged = 0;
  let refused: Awaited<ReturnType<TestApp['patch']>> | undefined;
  for (let i = 0; i < 500 && !refused; i++) {
    const res = await t.patch(7, { quantity: i }, { 'X-Request-Id': `fill-${i}-`.padEnd(128, 'x') });
    if (res.status === 200) acknowledged++;
    else refused = res;
  }
  assert.ok(refused, 'the disk filled up');
  assert.is(refused.status, 503);
  assert.equal(Object.keys(refused.json()).sort(), ['code', 'message', 'status']);
  assert.is(refused.json<ErrorBody>().code, 'unavailable');
  assert.not.match(refused.text, /SQLITE|sqlite/);
  assert.is(t.events().length, 1 + acknowledged, 'exactly the acknowledged writes');
  assert.equal((await rebuildProjection(t.store, { check: true })).differences, [], 'the projection agrees with the log');

  assert.is(await readiness(t), 503, 'not ready while full');
  t.tick(1000);
  assert.is(await readiness(t), 503, 'a probe a second later: still full');
  t.db.pragma('max_page_count = 1073741823');
  assert.is(await readiness(t), 503, 'probes at most once a second');
  t.tick(1000);
  assert.is(await readiness(t), 200, 'ready again by itself');
  assert.is((await t.patch(7, { quantity: 1 })).status, 200);
});

faults('a read-only database: 503, not ready, and ready again when writable', async ({ t }) => {
  t.db.pragma('query_only = ON');
  const res = await t.patch(7, { quantity: 9 });
  assert.is(res.status, 503);
  assert.is(res.json<ErrorBody>().code, 'unavailable');
  assert.is(t.events().length, 1);
  assert.is(await readiness(t), 503);
  assert.match((await t.request({ path: '/readyz' })).json<ErrorBody>().message, /cannot take writes/);
  t.db.pragma('query_only = OFF');
  t.tick(1000);
  assert.is(await readiness(t), 200);
  assert.is((await t.patch(7, { quantity: 9 })).status, 200);
});

faults('a successful write marks the database ready at once', async ({ t }) => {
  t.db.pragma('query_only = ON');
  assert.is((await t.patch(7, { quantity: 9 })).status, 503);
  t.db.pragma('query_only = OFF');
  assert.is((await t.patch(7, { quantity: 9 })).status, 200);
  assert.is(await readiness(t), 200);
});

faults('a full disk under load: the fault is logged once a second with a count, without a stack', async ({ t }) => {
  t.db.pragma(`max_page_count = ${t.db.pragma('page_count', { simple: true }) as number}`);
  let refused = 0;
  for (let i = 0; i < 500 && refused === 0; i++) {
    if ((await t.patch(7, { quantity: i }, { 'X-Request-Id': `fill-${i}-`.padEnd(128, 'x') })).status === 503) refused++;
  }
  assert.is(refused, 1, 'the disk filled up');
  const started = Date.now();
  for (let i = 0; i < 300; i++) {
    const res = await t.patch(7, { quantity: i }, { 'X-Request-Id': `flood-${i}-`.padEnd(128, 'x') });
    if (res.status === 503) refused++;
  }
  assert.ok(refused > 250, `${refused} refusals`);
  const seconds = Math.ceil((Date.now() - started) / 1000);
  // The count of the last second arrives when that second ends.
  await new Promise((r) => setTimeout(r, 1300));
  const warnings = t.logs
    .flatMap((chunk) => chunk.split('\n'))
    .filter((line) => line.includes('"level":40'))
    .map((line) => JSON.parse(line) as { fault?: string; count?: number; stack?: unknown; err?: unknown });
  const full = warnings.filter((w) => w.fault === 'SQLITE_FULL');
  assert.ok(full.length >= 1, 'the fault is logged');
  assert.ok(full.length <= seconds + 2, `${full.length} lines for ${refused} refusals in ${seconds} s`);
  assert.is(
    full.reduce((sum, w) => sum + (w.count ?? 0), 0),
    refused,
    'the counts add up to every refusal',
  );
  assert.is(warnings.length, full.length, 'and nothing else is warned of');
  assert.not.match(t.logs.join(''), /"stack"|\n\s+at /);
});

faults.run();
