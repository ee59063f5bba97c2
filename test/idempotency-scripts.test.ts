// The operator commands and the idempotency records: verify-log checks that each stored
// 200 names its event (the records are outside the hash chain), rebuild-projection leaves
// them as they are, and a backup carries them.
import * as assert from 'uvu/assert';
import { makeCommandHandler, type Idempotent } from '../src/commands.ts';
import { itemJson } from '../src/http/inventory-json.ts';
import { createKey, trackPets } from './kit/fixtures.ts';
import { tempDir } from './kit/paths.ts';
import { runScript } from './kit/scripts.ts';
import { execute, query } from './kit/sql.ts';
import { openStore, type FreshDatabase } from './kit/stores.ts';
import { targetSuites } from './kit/suites.ts';

const scripts = targetSuites<{ fresh: FreshDatabase }>('operator commands and the idempotency records', {
  async beforeEach(ctx) {
    ctx.fresh = await ctx.target.fresh();
    const store = await ctx.target.open(ctx.fresh.db);
    try {
      // The actor of the PATCH below is a key of the key log, as through the service.
      await createKey(store);
      await trackPets(store, [{ petId: 1, quantity: 5 }]);
      const commands = makeCommandHandler({ store, now: Date.now });
      // As the PATCH route stores a 200: the entry's version and the item.
      const idempotent: Idempotent = {
        scope: { apiKey: 'tester', key: 'k1' },
        path: '/v1/inventory/1',
        fingerprint: 'f',
        answer: (result) =>
          'entry' in result ? { status: 200, etag: `"${result.entry.version}"`, body: itemJson(result.entry) } : undefined,
      };
      await commands.handle({ type: 'SetQuantity', petId: 1n, quantity: 8 }, { actor: 'tester', requestId: 'r1' }, idempotent);
    } finally {
      await store.close();
    }
  },
  async afterEach(ctx) {
    await ctx.fresh.cleanup();
  },
});

const on = (ctx: { target: { name: 'sqlite' | 'postgres' }; fresh: FreshDatabase }) => ({ target: ctx.target, db: ctx.fresh.db });

scripts('verify-log checks each stored 200 against the log, which the chain does not cover', async (ctx) => {
  const ok = await runScript('verify-log', [], { db: ctx.fresh.db });
  assert.is(ok.status, 0, ok.stderr);
  assert.match(
    ok.stderr,
    /^ok: 2 events, chain intact\nok: \d+ key events, key chain intact, api_keys agrees\nok: the projection is the replay of the log; every append-only trigger is in place\nok: 1 idempotency records \(not in the chain\), each stored 200 names its event\n$/,
  );
  // A record forged to tell a client its write happened: the chain is intact, the record is not.
  await execute(on(ctx), `UPDATE idempotency_keys SET etag = '"9"'`);
  const forged = await runScript('verify-log', [], { db: ctx.fresh.db });
  assert.is(forged.status, 1, forged.stderr);
  assert.match(
    forged.stderr,
    /error: BROKEN idempotency record: a stored 200 for \/v1\/inventory\/1 names version 9, which the log does not have\n$/,
  );
  await execute(on(ctx), `UPDATE idempotency_keys SET etag = '"2"', body = '{"petId":1,"quantity":7,"status":"available"}'`);
  const other = await runScript('verify-log', [], { db: ctx.fresh.db });
  assert.is(other.status, 1);
  assert.match(other.stderr, /does not match that event/);
});

scripts('rebuild-projection leaves the records as they are', async (ctx) => {
  const before = await query(on(ctx), 'SELECT * FROM idempotency_keys');
  const r = await runScript('rebuild-projection', [], { db: ctx.fresh.db });
  assert.is(r.status, 0, r.stderr);
  assert.equal(await query(on(ctx), 'SELECT * FROM idempotency_keys'), before);
  assert.is(before.length, 1);
});

scripts('a SQLite backup carries the records and checks them', async (ctx) => {
  if (ctx.target.name !== 'sqlite') return; // PostgreSQL is backed up with pg_dump (backup.test.ts)
  const dir = tempDir('inv-idem-backup-');
  try {
    const out = dir.path('copy.db');
    const r = await runScript('backup', [out], { db: ctx.fresh.db });
    assert.is(r.status, 0, r.stderr);
    assert.match(r.stderr, /\nok: 1 idempotency records \(not in the chain\)/);
    const copy = await openStore(out, { readonly: true, mustExist: true });
    try {
      const record = await copy.idempotency.find({ apiKey: 'tester', key: 'k1' }, new Date().toISOString());
      assert.is(record?.etag, '"2"');
    } finally {
      await copy.close();
    }
  } finally {
    dir.cleanup();
  }
});

scripts.run();
