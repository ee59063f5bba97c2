// The operator commands and the idempotency records: verify-log checks that each stored
// 200 names its event (the records are outside the hash chain), rebuild-projection leaves
// them as they are, and a backup carries them.
import { generateKeyPairSync } from 'node:crypto';
import * as assert from 'uvu/assert';
import type { Idempotent } from '../../src/application/write/command-result.ts';
import { makeCommandHandler } from '../../src/application/write/commands.ts';
import { itemJson } from '../../src/http/routes/inventory-json.ts';
import { makeSigner, receiptHeader } from '../../src/support/signing.ts';
import { createKey, trackPets } from '../kit/fixtures.ts';
import { tempDir } from '../kit/paths.ts';
import { runScript } from '../kit/scripts.ts';
import { execute, query } from '../kit/sql.ts';
import { openStore, type FreshDatabase } from '../kit/stores.ts';
import { targetSuites } from '../kit/suites.ts';

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
        answers: {
          applied: (entry) => ({ status: 200, etag: `"${entry.version}"`, body: itemJson(entry) }),
          refused: (refusal) => {
            throw new Error(`unexpected refusal: ${refusal.reason}`);
          },
        },
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
    /^ok: 2 events, chain intact\nok: \d+ key events, key chain intact, api_keys agrees\nok: the projection and stock_adjustments are the replay of the log; every append-only trigger is in place\nok: 1 idempotency records \(not in the chain\), each stored 200 names its event\n$/,
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

scripts('verify-log checks that a stored receipt is its event`s, signed by a key of the key log', async (ctx) => {
  const key = { pem: generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }) as string };
  // Written as the service writes them: SQLite signs on its writer thread.
  const store = await openStore(ctx.fresh.db, { signingKey: key, ...(ctx.target.name === 'sqlite' ? { writer: 'thread' as const } : {}) });
  const { logId } = await store.logHead();
  try {
    const commands = makeCommandHandler({ store, now: Date.now });
    for (const [k, quantity] of [
      ['k2', 9],
      ['k3', 10],
    ] as const) {
      const idempotent: Idempotent = {
        scope: { apiKey: 'tester', key: k },
        path: '/v1/inventory/1',
        fingerprint: 'f',
        answers: {
          applied: (entry) => ({ status: 200, etag: `"${entry.version}"`, body: itemJson(entry) }),
          refused: (refusal) => {
            throw new Error(`unexpected refusal: ${refusal.reason}`);
          },
        },
      };
      await commands.handle({ type: 'SetQuantity', petId: 1n, quantity }, { actor: 'tester', requestId: k }, idempotent);
    }
  } finally {
    await store.close();
  }
  const stored = await query<{ idempotency_key: string; receipt: string }>(
    on(ctx),
    "SELECT idempotency_key, receipt FROM idempotency_keys WHERE idempotency_key IN ('k2', 'k3') ORDER BY idempotency_key",
  );
  const [k2, k3] = stored.map((r) => r.receipt);
  assert.match(String(k3), /^v=2, log="[^"]+", seq=4, hash="[0-9a-f]{64}", checkpoint=:[A-Za-z0-9+/=]+:, proof=\(/);
  const ok = await runScript('verify-log', [], { db: ctx.fresh.db });
  assert.is(ok.status, 0, ok.stderr);
  assert.match(ok.stderr, /ok: 3 idempotency records/);
  const hashOf = async (seq: number) => (await query<{ hash: string }>(on(ctx), `SELECT hash FROM events WHERE seq = ${seq}`))[0]!.hash;
  const stranger = makeSigner({ pem: generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }) as string });
  const cases: [string, string, RegExp][] = [
    [
      'the receipt of another event',
      String(k2),
      /at version 4 has a receipt for seq 3 \(hash [0-9a-f]{64}\), not for its event \(seq 4, hash [0-9a-f]{64}\)/,
    ],
    [
      'its seq altered',
      String(k3).replace('seq=4,', 'seq=3,'),
      /at version 4 has a receipt that has an inclusion path that does not lead to its checkpoint's root/,
    ],
    [
      'its checkpoint altered',
      String(k3).replace(
        /checkpoint=:([^:]+):/,
        (_, b64: string) =>
          `checkpoint=:${Buffer.from(Buffer.from(b64, 'base64').toString('utf8').replace('\n4\n', '\n5\n')).toString('base64')}:`,
      ),
      /has a receipt that carries a checkpoint no signing key of the key log signed/,
    ],
    [
      'signed by a key the key log does not list',
      receiptHeader(stranger, logId, 4, await hashOf(4)),
      /names signing key [0-9a-f]{16}, which the key log does not list/,
    ],
    [
      'of another log',
      String(k3).replace(/log="[^"]+"/, 'log="00000000-0000-4000-8000-000000000000"'),
      /names log 00000000-0000-4000-8000-000000000000, not this log/,
    ],
    ['not a receipt', 'sig=:AAAA:', /has a receipt that is not a Log-Receipt/],
  ];
  for (const [why, receipt, message] of cases) {
    await execute(on(ctx), `UPDATE idempotency_keys SET receipt = '${receipt}' WHERE idempotency_key = 'k3'`);
    const tampered = await runScript('verify-log', [], { db: ctx.fresh.db });
    assert.is(tampered.status, 1, why);
    assert.match(tampered.stderr, /error: BROKEN idempotency record: the stored 200 for \/v1\/inventory\/1 /, why);
    assert.match(tampered.stderr, message, why);
  }
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
      assert.is(record !== 'in_flight' ? record?.etag : record, '"2"');
    } finally {
      await copy.close();
    }
  } finally {
    dir.cleanup();
  }
});

scripts.run();
