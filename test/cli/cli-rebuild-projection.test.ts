// scripts/rebuild-projection end to end, as a child process on every store (test/kit/cli.ts).
import * as assert from 'uvu/assert';
import { parseJson } from '../kit/http.ts';
import { countEvents, execute, query } from '../kit/sql.ts';
import { commandsOn } from '../kit/fixtures.ts';
import { type EventData, script, expectExit, cliSuite, seed, track } from '../kit/cli.ts';

const rebuild = cliSuite('scripts/rebuild-projection');

const INVENTORY = 'SELECT pet_id, quantity, status, version, updated_at FROM inventory ORDER BY pet_id';

rebuild('--check finds drift and changes nothing; a rebuild repairs it to the replay', async (ctx) => {
  await seed(ctx, [
    track(1n, 5),
    { type: 'SetQuantity', petId: 1n, quantity: 8 },
    track(2n, 1, 'pending'),
    { type: 'SetStatus', petId: 2n, status: 'sold' },
    track(3n, 2),
    track(9007199254740993n, 6),
  ]);
  const healthy = await query(ctx, INVENTORY);

  const clean = script('rebuild-projection', ['--check', '--db', ctx.db]);
  expectExit(clean, 0, 'rebuild-projection --check on a healthy database');
  assert.match(clean.stdout, /^checked in [\d.]+ s: 6 events replayed, 4 entries compared, nothing written; 0 differ\n$/);

  // Corrupt the projection: a changed quantity, a missing row, a row without events.
  await execute(
    ctx,
    `UPDATE inventory SET quantity = 999 WHERE pet_id = 1;
     DELETE FROM inventory WHERE pet_id = 9007199254740993;
     INSERT INTO inventory VALUES (77, 1, 'available', 1, '2026-01-01T00:00:00.000Z');`,
  );
  const corrupt = await query(ctx, INVENTORY);

  const drift = script('rebuild-projection', ['--check', '--db', ctx.db]);
  expectExit(drift, 1, 'rebuild-projection --check with drift');
  assert.match(drift.stdout, /3 differ:/);
  assert.match(drift.stdout, /pet 1: quantity 999, available, version 2 -> quantity 8, available, version 2/);
  assert.match(drift.stdout, /pet 77: quantity 1, available, version 1 -> no entry/);
  assert.match(drift.stdout, /pet 9007199254740993: no entry -> quantity 6, available, version 1/);
  assert.not.match(drift.stdout, /pet [23]:/, 'only the differing pets are listed');
  assert.equal(await query(ctx, INVENTORY), corrupt, '--check changed nothing');

  const repaired = script('rebuild-projection', ['--db', ctx.db]);
  expectExit(repaired, 0, 'rebuild-projection');
  assert.match(repaired.stdout, /^rebuilt in [\d.]+ s: 6 events replayed, 4 entries written; 3 differed:/);
  assert.match(repaired.stdout, /pet 1: /);
  assert.match(repaired.stdout, /pet 77: /);
  assert.match(repaired.stdout, /pet 9007199254740993: /);
  assert.equal(await query(ctx, INVENTORY), healthy, 'the projection equals the replay');
  assert.is(await countEvents(ctx), 6n, 'the log is untouched');

  const after = script('rebuild-projection', ['--check', '--db', ctx.db]);
  expectExit(after, 0, 'rebuild-projection --check after the rebuild');
  assert.match(after.stdout, /0 differ/);
});

rebuild('the events table refuses UPDATE and DELETE from a plain connection', async (ctx) => {
  await seed(ctx, [track(1n, 5)]);
  const refusal = (sql: string) =>
    execute(ctx, sql).then(
      () => 'ran',
      (error: Error) => error.message,
    );
  assert.match(await refusal('UPDATE events SET data = \'{"quantity":1,"status":"sold","schemaVersion":1}\''), /append-only/);
  assert.match(await refusal('DELETE FROM events'), /append-only/);
  assert.is(await countEvents(ctx), 1n);
  const [row] = await query<{ data: string }>(ctx, 'SELECT data FROM events');
  assert.is(parseJson<EventData>(row!.data).quantity, 5);
});

const ADJUSTMENTS = 'SELECT seq, pet_id, previous_quantity, quantity, delta, actor FROM stock_adjustments ORDER BY seq';

rebuild('stock_adjustments is append-only; a row no event makes is BROKEN for verify-log and put right by a rebuild', async (ctx) => {
  const store = await ctx.target.open(ctx.db);
  try {
    await store.keys.create('till', 'cli:ops');
    const commands = commandsOn(store);
    await commands.handle(track(1n, 5), { actor: 'cli:ops', requestId: 'r1' });
    await commands.handle({ type: 'SetQuantity', petId: 1n, quantity: 8 }, { actor: 'till', requestId: 'r2' });
    await commands.handle({ type: 'SetQuantity', petId: 1n, quantity: 2 }, { actor: 'till', requestId: 'r3' });
  } finally {
    await store.close();
  }
  const healthy = await query(ctx, ADJUSTMENTS);
  assert.equal(
    healthy.map((r) => [r.seq, r.previous_quantity, r.quantity, r.delta].map(String)),
    [
      ['2', '5', '8', '3'],
      ['3', '8', '2', '-6'],
    ],
  );
  const refusal = (sql: string) =>
    execute(ctx, sql).then(
      () => 'ran',
      (error: Error) => error.message,
    );
  assert.match(await refusal('UPDATE stock_adjustments SET quantity = 1'), /append-only/);
  assert.match(await refusal('DELETE FROM stock_adjustments'), /append-only/);

  await execute(
    ctx,
    `INSERT INTO stock_adjustments (seq, recorded_at, pet_id, previous_quantity, quantity, actor, request_id)
     VALUES (99, '2026-01-01T00:00:00.000Z', 1, 2, 40, 'mallory', 'forged')`,
  );
  const broken = script('verify-log', ['--db', ctx.db]);
  expectExit(broken, 1, 'verify-log with a forged stock_adjustments row');
  assert.match(
    broken.stderr,
    /BROKEN: stock_adjustments differs from the events in 1 row: seq 99 has pet 1, 2 -> 40 \(delta 38\), actor mallory, .* where the events give no row/,
  );

  const repaired = script('rebuild-projection', ['--db', ctx.db]);
  expectExit(repaired, 0, 'rebuild-projection');
  assert.match(repaired.stdout, /\n1 stock_adjustments rows differed from the events and were put right\n$/);
  assert.equal(await query(ctx, ADJUSTMENTS), healthy, 'the table holds the rows the events give');
  expectExit(script('verify-log', ['--db', ctx.db]), 0, 'verify-log after the rebuild');
  assert.match(await refusal('DELETE FROM stock_adjustments'), /append-only/, 'the triggers are back');
});

rebuild.run();
