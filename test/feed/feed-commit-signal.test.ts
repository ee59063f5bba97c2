// A commit of this process reaches live streams through the commit signal, not through
// the feed's poll of the store's change token: with the poll an hour apart, a PATCH's
// event still arrives at once.
import * as assert from 'uvu/assert';
import { parseEvent, seed, stream } from '../kit/feed.ts';
import { appSuite } from '../kit/suites.ts';

const HOUR_MS = 3_600_000;

const test = appSuite('the change feed hears this process commit', {
  app: { feed: { pollMs: HOUR_MS, heartbeatMs: HOUR_MS, keyCheckMs: HOUR_MS } },
});

test("a live stream is sent a PATCH's event without waiting for a poll", async ({ t }) => {
  await seed(t, 2, 2);
  const table = await t.events();
  const s = await stream(t, '?after=0');
  await s.waitFor(table.length);
  for (let i = 0; i < 3; i++) {
    assert.is((await t.patch(1, { quantity: 50 + i })).status, 200);
    await s.waitFor(table.length + i + 1, 5_000);
    assert.is(parseEvent(s.messages[s.messages.length - 1]!.data).data.quantity, 50 + i);
  }
  s.close();
});

test.run();
