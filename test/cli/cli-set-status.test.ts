// scripts/set-status end to end, as a child process on every store (test/kit/cli.ts).
import * as assert from 'uvu/assert';
import { parseJson } from '../kit/http.ts';
import { countEvents, query } from '../kit/sql.ts';
import {
  type EventData,
  ISO_MS,
  UUID,
  operator,
  script,
  expectExit,
  expectFailure,
  expectUsageError,
  cliSuite,
  seed,
  track,
} from '../kit/cli.ts';

const setStatus = cliSuite('scripts/set-status');

setStatus('changes the status alone: a StatusSet event, the quantity untouched', async (ctx) => {
  await seed(ctx, [track(5n, 4, 'available')]);
  const r = script('set-status', ['5', 'sold', '--db', ctx.db]);
  expectExit(r, 0, 'set-status 5 sold');
  assert.match(r.stdout, /pet 5: sold, quantity 4/);

  const events = await query(ctx, 'SELECT * FROM events ORDER BY seq');
  assert.is(events.length, 2);
  const e = events[1]!;
  assert.is(e.type, 'StatusSet');
  assert.is(e.pet_id, 5n);
  assert.is(e.version, 2n);
  assert.is(e.actor, operator);
  assert.match(String(e.request_id), UUID);
  assert.match(String(e.recorded_at), ISO_MS);
  const data = parseJson<EventData>(String(e.data));
  assert.is(data.status, 'sold');
  assert.is(data.schemaVersion, 1);
  assert.not.ok('quantity' in data, 'StatusSet carries no quantity');
  assert.equal(await query(ctx, 'SELECT pet_id, quantity, status, version, updated_at FROM inventory'), [
    { pet_id: 5n, quantity: 4n, status: 'sold', version: 2n, updated_at: e.recorded_at },
  ]);
});

setStatus('an untracked pet exits 1; a bad status exits 2; nothing is appended', async (ctx) => {
  await seed(ctx, [track(5n, 4)]);
  const untracked = script('set-status', ['99', 'sold', '--db', ctx.db]);
  expectFailure(untracked, /pet 99 is not tracked/, 'set-status of an untracked pet');
  assert.is(untracked.stdout, '');

  expectUsageError(script('set-status', ['5', 'lost', '--db', ctx.db]), /STATUS must be available, pending or sold/, 'set-status 5 lost');

  assert.is(await countEvents(ctx), 1n);
  assert.equal(await query(ctx, 'SELECT quantity, status, version FROM inventory'), [{ quantity: 4n, status: 'available', version: 1n }]);
});

setStatus.run();
