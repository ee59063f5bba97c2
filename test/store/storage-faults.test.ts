// Storage faults: a full disk (each store target says how it fakes one) or a read-only
// database. Writes answer 503 in the Error shape, nothing is half-written, /readyz says
// not ready, and the service recovers by itself once the fault is gone.
import * as assert from 'uvu/assert';
import { rebuildProjection } from '../../src/application/verify/rebuild.ts';
import type { TestApp } from '../kit/app.ts';
import { assertErrorShape, type ErrorBody } from '../kit/http.ts';
import { appSuite } from '../kit/suites.ts';

const faults = appSuite('storage faults', { given: (t) => t.track(7, 3) });

async function readiness(t: TestApp): Promise<number> {
  return (await t.request({ path: '/readyz' })).status;
}

faults('a full disk: 503, nothing half-written, not ready, and ready again by itself when space returns', async ({ t }) => {
  assert.is(await readiness(t), 200);
  const spaceBack = await t.faults().fillDisk();
  let acknowledged = 0;
  let refused: Awaited<ReturnType<TestApp['patch']>> | undefined;
  for (let i = 0; i < 500 && !refused; i++) {
    const res = await t.patch(7, { quantity: i }, { 'X-Request-Id': `fill-${i}-`.padEnd(128, 'x') });
    if (res.status === 200) acknowledged++;
    else refused = res;
  }
  assert.ok(refused, 'the disk filled up');
  assertErrorShape(refused, 503, 'unavailable');
  assert.not.match(refused.text, /SQLITE|sqlite|postgres/i);
  assert.is((await t.events()).length, 1 + acknowledged, 'exactly the acknowledged writes');
  assert.equal((await rebuildProjection(t.store, { check: true })).differences, [], 'the projection agrees with the log');

  assert.is(await readiness(t), 503, 'not ready while full');
  t.tick(1000);
  assert.is(await readiness(t), 503, 'a probe a second later: still full');
  await spaceBack();
  assert.is(await readiness(t), 503, 'probes at most once a second');
  t.tick(1000);
  assert.is(await readiness(t), 200, 'ready again by itself');
  assert.is((await t.patch(7, { quantity: 1 })).status, 200);
});

faults('a read-only database: 503, not ready, and ready again when writable', async ({ t }) => {
  const writable = await t.faults().readOnly();
  const res = await t.patch(7, { quantity: 9 });
  assertErrorShape(res, 503, 'unavailable');
  assert.is((await t.events()).length, 1);
  assert.is(await readiness(t), 503);
  assert.match((await t.request({ path: '/readyz' })).json<ErrorBody>().message, /cannot take writes/);
  await writable();
  t.tick(1000);
  assert.is(await readiness(t), 200);
  assert.is((await t.patch(7, { quantity: 9 })).status, 200);
});

faults('a successful write marks the database ready at once', async ({ t }) => {
  const writable = await t.faults().readOnly();
  assert.is((await t.patch(7, { quantity: 9 })).status, 503);
  // Probed now: the next probe is a second away (the clock stands still), so only the
  // commit below can tell readiness that writes work again.
  assert.is(await readiness(t), 503);
  await writable();
  assert.is((await t.patch(7, { quantity: 9 })).status, 200);
  assert.is(await readiness(t), 200);
});

faults('a full disk under load: the fault is logged once a second with a count, without a stack', async ({ t }) => {
  const disk = t.faults();
  await disk.fillDisk();
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
  const full = warnings.filter((w) => w.fault === disk.diskFullCode);
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
