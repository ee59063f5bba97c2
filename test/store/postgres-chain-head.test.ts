// PostgreSQL keeps where the next write chains on in a row of its own (chain_head). Moved
// behind the service's back (here back to seq 1, its hash kept), every write would chain
// onto the wrong event or collide with one that exists. The service must refuse writes
// with 503 unavailable saying why, /readyz must say why too, the log must name the
// mismatch once (not once per refused write), and nothing may be written meanwhile; once
// the head is put back, writes are taken again.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { startApp, type TestApp } from '../kit/app.ts';
import { assertErrorShape, type ErrorBody } from '../kit/http.ts';
import { postgresTarget } from '../kit/postgres-target.ts';

const head = suite<{ app: TestApp }>("PostgreSQL's chain head not at the newest event", {} as { app: TestApp });
head.before.each(async (ctx) => {
  ctx.app = await startApp({ target: postgresTarget() });
  await ctx.app.track(7, 1);
  for (const quantity of [2, 3, 4]) assert.is((await ctx.app.patch(7, { quantity })).status, 200);
});
head.after.each(async (ctx) => {
  await ctx.app.close();
});

const MISMATCH = /the chain head \(seq 1, hash [0-9a-f]{64}\) does not match the newest event \(seq 4, hash [0-9a-f]{64}\)/;

/** The log lines that name the mismatch. */
function mismatchLines(app: TestApp): string[] {
  return app.logs.flatMap((chunk) => chunk.split('\n')).filter((line) => line.includes('"code":"chain_head_mismatch"'));
}

async function moveHeadBack(app: TestApp): Promise<void> {
  await app.target.tamper.pastGuards(app.db, 'UPDATE chain_head SET seq = 1');
}

head('writes and /readyz answer 503 saying why, nothing is written, and the log names it once', async ({ app }) => {
  assert.is((await app.get('/readyz')).status, 200);
  await moveHeadBack(app);
  for (let i = 0; i < 10; i++) {
    const write = await app.patch(7, { quantity: 20 + i });
    assertErrorShape(write, 503, 'unavailable');
    assert.match(write.json<ErrorBody>().message, MISMATCH);
    const ready = await app.get('/readyz');
    assert.is(ready.status, 503);
    assert.match(ready.json<ErrorBody>().message, MISMATCH);
    // Readiness probes again a second later: it still sees the mismatch.
    app.tick(1000);
  }
  const events = await app.events();
  assert.is(events.length, 4, 'nothing written');
  assert.is(mismatchLines(app).length, 1, `logged once: ${mismatchLines(app).join('\n')}`);
  assert.match(mismatchLines(app)[0]!, MISMATCH);
  assert.not.match(app.logs.join(''), /unexpected error|duplicate key/);
});

head('the head put back: writes are taken again, and a new mismatch is logged again', async ({ app }) => {
  await moveHeadBack(app);
  assert.is((await app.patch(7, { quantity: 20 })).status, 503);
  await app.target.tamper.pastGuards(app.db, 'UPDATE chain_head SET seq = 4');
  assert.is((await app.patch(7, { quantity: 21 })).status, 200);
  assert.is((await app.get('/readyz')).status, 200);
  await app.target.tamper.pastGuards(app.db, 'UPDATE chain_head SET seq = 2');
  const write = await app.patch(7, { quantity: 22 });
  assertErrorShape(write, 503, 'unavailable');
  assert.match(write.json<ErrorBody>().message, /the chain head \(seq 2, hash [0-9a-f]{64}\) does not match the newest event \(seq 5,/);
  assert.is(mismatchLines(app).length, 2, 'once per stretch');
  assert.equal(
    (await app.events()).map((e) => e.seq),
    [1n, 2n, 3n, 4n, 5n],
    'only the write between the stretches',
  );
});

head.run();
