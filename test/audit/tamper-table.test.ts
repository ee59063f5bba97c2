// The auditors' guide's "what each check catches" table, rerun: each row is a tampering
// performed here on both stores, past every guard as the database's owner could, and
// the check the row names is run: verify-log alone, verify-log with a head kept before
// the tampering (its event digest and its key digest), a client comparing the events in
// its key's name with the receipts it holds, and a store opened before the tampering
// (the running service) authenticating the key. Where a row says nothing but a receipt
// or a kept head catches it, verify-log alone is shown to pass.
import { generateKeyPairSync } from 'node:crypto';
import * as assert from 'uvu/assert';
import { eventHash, GENESIS_HASH, keyEventHash } from '../../src/store/hash-chain.ts';
import { generateKey, hashKey } from '../../src/store/keys.ts';
import type { InventoryStore } from '../../src/store/port.ts';
import { appliedEntry } from '../../src/application/write/commands.ts';
import { commandsOn } from '../kit/fixtures.ts';
import { runScriptSync } from '../kit/scripts.ts';
import { query } from '../kit/sql.ts';
import { openStore, type FreshDatabase } from '../kit/stores.ts';
import { targetSuites, type OnTarget } from '../kit/suites.ts';
import { postgresTarget } from '../kit/postgres-target.ts';
import { forgedEventSql, forgedProjectionSql, regrowTree, rewriteKeyChainSql, type ForgedEvent } from '../kit/tamper.ts';

const KEY = { pem: generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }) as string };
const T0 = Date.parse('2026-05-01T00:00:00.000Z');
const iso = (seconds: number) => new Date(T0 + seconds * 1000).toISOString();

interface Ctx {
  fresh: FreshDatabase;
  /** The secrets of the keys of the history. */
  secrets: Record<'till' | 'front' | 'auditor', string>;
  /** The receipts "front" holds: seq → hash. */
  receipts: Map<string, string>;
  /** A head kept after the history: --digest arguments. */
  kept: string[];
  /** A store opened before the tampering, as a running service holds one. */
  live: InventoryStore;
}
type C = Ctx & OnTarget;

/**
 * Keys till, front (read-write) and auditor (read-only); pet 1 tracked, set twice by
 * till and once by front (which keeps its receipt); till revoked. One second a step.
 */
async function history(ctx: C): Promise<void> {
  let t = T0;
  const now = () => (t += 1000);
  const store = await openStore(ctx.fresh.db, { signingKey: KEY, now });
  try {
    ctx.secrets = {
      till: await store.keys.create('till', 'cli:ops'),
      front: await store.keys.create('front', 'cli:ops'),
      auditor: await store.keys.create('auditor', 'cli:ops', 'read-only'),
    };
    const commands = commandsOn(store, now);
    await commands.handle({ type: 'TrackPet', petId: 1n, quantity: 5, status: 'available' }, { actor: 'cli:ops', requestId: 'r1' });
    await commands.handle({ type: 'SetQuantity', petId: 1n, quantity: 3 }, { actor: 'till', requestId: 'r2' });
    await commands.handle({ type: 'SetQuantity', petId: 1n, quantity: 2 }, { actor: 'till', requestId: 'r3' });
    const written = await commands
      .handle({ type: 'SetQuantity', petId: 1n, quantity: 4 }, { actor: 'front', requestId: 'r4' })
      .then(appliedEntry);
    const receipt = /seq=(\d+), hash="([0-9a-f]{64})"/.exec(String(written.receipt))!;
    ctx.receipts = new Map([[receipt[1]!, receipt[2]!]]);
    assert.is(await store.keys.revoke('till', 'cli:ops'), 'revoked');
    const head = await store.logHead();
    ctx.kept = ['--digest', `${head.seq}:${head.hash}`, '--digest', `keys:${head.keys.seq}:${head.keys.hash}`];
  } finally {
    await store.close();
  }
}

const on = (ctx: C) => ({ target: ctx.target, db: ctx.fresh.db });
const past = (ctx: C, sql: string) => ctx.target.tamper.pastGuards(ctx.fresh.db, sql);

/** The events by seq: [seq, pet, version, type, data, actor, request id, time]. */
async function eventRows(ctx: C) {
  const rows = await query<Record<string, unknown>>(
    on(ctx),
    'SELECT seq, pet_id, version, type, data, actor, request_id, recorded_at, hash FROM events ORDER BY seq',
  );
  return rows.map((r) => ({
    seq: BigInt(String(r.seq)),
    petId: BigInt(String(r.pet_id)),
    version: BigInt(String(r.version)),
    type: String(r.type),
    data: String(r.data),
    actor: String(r.actor),
    requestId: String(r.request_id),
    recordedAt: String(r.recorded_at),
    hash: String(r.hash),
  }));
}

/** Rebuilds the Merkle tree as a competent forger would. */
const regrow = (ctx: C) => regrowTree(ctx.target, ctx.fresh.db);

/** Recomputes every event's prev_hash and hash (and PostgreSQL's chain head), as a competent forger would. */
async function rechain(ctx: C): Promise<void> {
  let prevHash = GENESIS_HASH;
  const sql: string[] = [];
  for (const { seq, petId, version, type, data, actor, requestId, recordedAt } of await eventRows(ctx)) {
    const hash = eventHash({ prevHash, seq, petId, version, type, data, actor, requestId, recordedAt });
    sql.push(`UPDATE events SET prev_hash = '${prevHash}', hash = '${hash}' WHERE seq = ${seq}`);
    prevHash = hash;
  }
  if (ctx.target.name === 'postgres') sql.push(`UPDATE chain_head SET hash = '${prevHash}'`);
  await past(ctx, sql.join(';\n'));
  await regrow(ctx);
}

/** Appends an event of pet 1 (a QuantitySet unless told), chained, projected, PostgreSQL's head moved on. */
async function forge(ctx: C, f: ForgedEvent & { moveHead?: boolean }) {
  const last = (await eventRows(ctx)).at(-1)!;
  const seq = last.seq + 1n;
  const forged = forgedEventSql(seq, last.hash, f);
  const sql = [forged.sql, forgedProjectionSql(f, seq)];
  if (ctx.target.name === 'postgres' && f.moveHead !== false) sql.push(`UPDATE chain_head SET seq = ${seq}, hash = '${forged.hash}'`);
  await past(ctx, sql.join(';\n'));
  await regrow(ctx);
  return Number(seq);
}

/** The key log rows as they are now. */
async function keyLog(ctx: C) {
  const store = await ctx.target.open(ctx.fresh.db, { readonly: true });
  try {
    return (await store.keyHistory()).events;
  } finally {
    await store.close();
  }
}

/** The client's check (the auditors' guide): events in front's name without its receipt, and receipts the log lost. */
async function receiptsCheck(ctx: C): Promise<string[]> {
  const events = await eventRows(ctx);
  const unreceipted = events
    .filter((e) => e.actor === 'front' && ctx.receipts.get(String(e.seq)) !== e.hash)
    .map((e) => `no receipt for seq ${e.seq}`);
  const lost = [...ctx.receipts]
    .filter(([seq, hash]) => !events.some((e) => String(e.seq) === seq && e.hash === hash))
    .map(([seq]) => `receipt for seq ${seq} not in the log`);
  return [...unreceipted, ...lost];
}

type Expect = RegExp | 'passes';
interface Row {
  /** The table's row, as the guide words it. */
  row: string;
  only?: 'postgres';
  tamper: (ctx: C) => Promise<void>;
  /** verify-log alone: BROKEN with this message, or passes (with warning, if given). */
  alone: Expect;
  warning?: RegExp;
  /** verify-log with the head kept before the tampering. */
  kept?: Expect;
  /** The client's receipts check finds something. */
  receipts?: boolean;
  /** The key the running service is shown, and whether it refuses it. */
  service?: { key: (ctx: C) => string; refuses: boolean };
}

function expectRun(args: string[], ctx: C, expected: Expect, warning: RegExp | undefined, what: string): void {
  const r = runScriptSync('verify-log', args, { db: ctx.fresh.db });
  if (expected === 'passes') {
    assert.is(r.status, 0, `${what} passes: ${r.stderr}`);
    if (warning) assert.match(r.stderr, warning, what);
    return;
  }
  assert.is(r.status, 1, `${what} is BROKEN: ${r.stderr}`);
  assert.match(r.stderr, expected, what);
}

/** A key no one was given: the secret of the rows inserted behind the triggers. */
const MALLORY = generateKey();
const ROWS: Row[] = [
  {
    row: 'A field of an event changed',
    tamper: (ctx) => past(ctx, `UPDATE events SET data = '{"quantity":50,"schemaVersion":1}' WHERE seq = 2`),
    alone: /^error: BROKEN at seq 2: the hash does not match the row: a field of this event was changed/,
  },
  {
    row: 'An event removed',
    tamper: (ctx) => past(ctx, 'DELETE FROM events WHERE seq = 2'),
    alone: /^error: BROKEN at seq 3: prev_hash does not link to the event before it \(seq 1\)/,
  },
  {
    row: 'Events reordered (their seq swapped)',
    tamper: (ctx) =>
      past(
        ctx,
        'UPDATE events SET seq = 100 WHERE seq = 2; UPDATE events SET seq = 2 WHERE seq = 3; UPDATE events SET seq = 3 WHERE seq = 100',
      ),
    alone: /^error: BROKEN at seq 2: /,
  },
  {
    row: 'An event removed, with the chain recomputed',
    tamper: async (ctx) => {
      await past(ctx, 'DELETE FROM events WHERE seq = 2');
      await rechain(ctx);
    },
    alone: /^error: BROKEN at seq 3: seq 2 is missing \(events are numbered without gaps\)/,
    receipts: true,
  },
  {
    row: 'A node of the Merkle tree changed (tree_nodes)',
    tamper: (ctx) =>
      past(
        ctx,
        `UPDATE tree_nodes SET hash = ${ctx.target.name === 'sqlite' ? "X'" + '00'.repeat(32) + "'" : "decode('" + '00'.repeat(32) + "', 'hex')"} WHERE level = 0 AND idx = 1`,
      ),
    alone:
      /^error: BROKEN at seq 2: the Merkle tree's node at level 0, index 1 \(up to seq 2\) is A{43}=, not .* as the events give: the tree \(tree_nodes\) was edited/,
  },
  {
    row: 'A node added to the Merkle tree past the log`s events',
    tamper: (ctx) =>
      past(
        ctx,
        `INSERT INTO tree_nodes (level, idx, hash) VALUES (0, 99, ${ctx.target.name === 'sqlite' ? "X'" + '11'.repeat(32) + "'" : "decode('" + '11'.repeat(32) + "', 'hex')"})`,
      ),
    alone: /^error: BROKEN at seq 4: the Merkle tree holds \d+ nodes where the log's 4 events make \d+: nodes were added to tree_nodes/,
  },
  {
    row: 'The newest events cut off',
    tamper: async (ctx) => void (await ctx.target.tamper.deleteNewestEvent(ctx.fresh.db)),
    alone: /the sequence counter is at 4 but the log ends at seq 3: the newest events were cut off/,
    receipts: true,
  },
  {
    row: 'Any of these, with the chain, the numbering, the counter and the Merkle tree rewritten (a tail cut, projection redone)',
    tamper: async (ctx) => {
      await past(
        ctx,
        [
          'DELETE FROM events WHERE seq = 4',
          'DELETE FROM stock_adjustments WHERE seq = 4',
          ctx.target.name === 'sqlite'
            ? "UPDATE sqlite_sequence SET seq = 3 WHERE name = 'events'"
            : 'UPDATE chain_head SET seq = 3, hash = (SELECT hash FROM events WHERE seq = 3)',
          'UPDATE inventory SET quantity = 2, version = 3, updated_at = (SELECT recorded_at FROM events WHERE seq = 3) WHERE pet_id = 1',
        ].join(';\n'),
      );
      await regrow(ctx);
    },
    alone: 'passes',
    kept: /^error: BROKEN at seq 4: the log ends at seq 3, before the digest's: it was truncated/,
    receipts: true,
  },
  {
    row: 'Any of these, with the chain and the Merkle tree rewritten (a field changed, every hash recomputed)',
    tamper: async (ctx) => {
      await past(
        ctx,
        `UPDATE events SET data = '{"quantity":30,"schemaVersion":1}' WHERE seq = 2;
         UPDATE stock_adjustments SET quantity = 30 WHERE seq = 2;
         UPDATE stock_adjustments SET previous_quantity = 30 WHERE seq = 3`,
      );
      await rechain(ctx);
    },
    alone: 'passes',
    kept: /^error: BROKEN at seq 4: the event has hash [0-9a-f]{64}, not the digest's: history up to it was rewritten/,
    receipts: true,
  },
  {
    row: "A key's row changed (its revocation back-dated)",
    tamper: (ctx) => past(ctx, `UPDATE api_keys SET revoked_at = '${iso(2)}' WHERE name = 'till'`),
    alone: /^error: BROKEN at key seq \d+: api_keys row of key "till" differs from its KeyRevoked event: its revocation was changed/,
  },
  {
    row: 'A key deleted from api_keys',
    tamper: (ctx) => past(ctx, "DELETE FROM api_keys WHERE name = 'auditor'"),
    alone: /^error: BROKEN at key seq \d+: key "auditor" is in the key log but not in api_keys: it was deleted/,
    service: { key: (ctx) => ctx.secrets.auditor, refuses: true },
  },
  {
    row: "A key's api_keys row deleted and inserted again under its name",
    tamper: (ctx) =>
      past(
        ctx,
        `DELETE FROM api_keys WHERE name = 'front';
         INSERT INTO api_keys (name, hash, created_at, created_by) VALUES ('front', '${hashKey(MALLORY)}', '${iso(2)}', 'cli:ops')`,
      ),
    alone: /^error: BROKEN at key seq \d+: api_keys row of key "front" differs from its KeyCreated event: it was changed or recreated/,
    service: { key: () => MALLORY, refuses: true },
  },
  {
    row: 'A key deleted and created again under its name, key log and all',
    tamper: (ctx) => past(ctx, "DELETE FROM api_key_events WHERE name = 'till'; DELETE FROM api_keys WHERE name = 'till'"),
    alone: /^error: BROKEN at key seq \d+: prev_hash does not link to the key event before it/,
  },
  {
    row: 'A key deleted and created again under its name, with the key log rewritten too',
    tamper: async (ctx) => {
      await past(ctx, "DELETE FROM api_key_events WHERE name = 'till'; DELETE FROM api_keys WHERE name = 'till'");
      await past(ctx, rewriteKeyChainSql(await keyLog(ctx), ctx.target.name));
      const store = await ctx.target.open(ctx.fresh.db, { now: () => T0 + 60_000 });
      try {
        await store.keys.create('till', 'cli:ops');
      } finally {
        await store.close();
      }
    },
    alone: new RegExp(`^error: BROKEN at seq 2: its actor "till" became a key only at ${iso(60)}, after the event`),
  },
  {
    row: 'A key row inserted behind the triggers',
    tamper: (ctx) =>
      past(
        ctx,
        `INSERT INTO api_keys (name, hash, created_at, created_by) VALUES ('mallory', '${hashKey(MALLORY)}', '${iso(2)}', 'cli:ops')`,
      ),
    alone: /^error: BROKEN at key seq \d+: key "mallory" of api_keys has no KeyCreated event/,
    service: { key: () => MALLORY, refuses: true },
  },
  {
    row: 'A key un-revoked behind the triggers',
    tamper: (ctx) => past(ctx, "UPDATE api_keys SET revoked_at = NULL, revoked_by = NULL WHERE name = 'till'"),
    alone: /^error: BROKEN at key seq \d+: api_keys row of key "till" differs from its KeyRevoked event: its revocation was changed/,
    service: { key: (ctx) => ctx.secrets.till, refuses: true },
  },
  {
    row: "A key's scope (read-only) changed",
    tamper: (ctx) => past(ctx, "UPDATE api_key_events SET data = '' WHERE name = 'auditor'"),
    alone: /^error: BROKEN at key seq \d+: the hash does not match the row: a field of this key event was changed/,
    service: { key: (ctx) => ctx.secrets.auditor, refuses: true },
  },
  {
    row: "An event added in a key's name, chained, while the key was revoked",
    tamper: async (ctx) => void (await forge(ctx, { version: 5, quantity: 1, actor: 'till', recordedAt: iso(60) })),
    alone: /^error: BROKEN at seq 5: its actor "till" was revoked at \S+, before the event/,
  },
  {
    row: "An event added in a key's name, chained, before the key existed",
    tamper: async (ctx) => void (await forge(ctx, { version: 5, quantity: 1, actor: 'front', recordedAt: iso(-60) })),
    alone: /^error: BROKEN at seq 5: its actor "front" became a key only at/,
    receipts: true,
  },
  {
    row: "A QuantitySet added in an operator's name (`cli:…`), chained and projected",
    tamper: async (ctx) => void (await forge(ctx, { version: 5, quantity: 1, actor: 'cli:root', recordedAt: iso(60) })),
    alone: /^error: BROKEN at seq 5: its actor "cli:root" is an operator, whose commands write PetTracked and StatusSet, not QuantitySet/,
    kept: /^error: BROKEN at seq 5: its actor "cli:root" is an operator/,
  },
  {
    row: "An event added in a read-only key's name, chained and projected",
    tamper: async (ctx) => void (await forge(ctx, { version: 5, quantity: 1, actor: 'auditor', recordedAt: iso(60) })),
    alone: /^error: BROKEN at seq 5: its actor "auditor" is a read-only key, which writes nothing/,
    kept: /^error: BROKEN at seq 5: its actor "auditor" is a read-only key/,
  },
  {
    row: "A StatusSet added in a key's name, chained and projected",
    tamper: async (ctx) => void (await forge(ctx, { version: 5, quantity: 4, actor: 'front', recordedAt: iso(60), type: 'StatusSet' })),
    alone: /^error: BROKEN at seq 5: its actor "front" is an API key, whose PATCH writes QuantitySet, not StatusSet/,
    kept: /^error: BROKEN at seq 5: its actor "front" is an API key/,
    receipts: true,
  },
  {
    row: 'An event added with a version that skips',
    tamper: async (ctx) => void (await forge(ctx, { version: 7, quantity: 1, actor: 'cli:ops', recordedAt: iso(60), type: 'StatusSet' })),
    alone: /^error: BROKEN at seq 5: entry 1 has version 7 after version 4/,
  },
  {
    row: '`inventory` edited (GET answers what the log does not say)',
    tamper: (ctx) => ctx.target.tamper.asOwner(ctx.fresh.db, 'UPDATE inventory SET quantity = 99 WHERE pet_id = 1'),
    alone: /^error: BROKEN: the projection \(inventory\) differs from the replay of the log in 1 entry: entry 1 has quantity 99/,
  },
  {
    row: "`stock_adjustments` edited (an auditor's answer differs from the log)",
    tamper: (ctx) => past(ctx, 'UPDATE stock_adjustments SET previous_quantity = 9 WHERE seq = 3'),
    alone:
      /^error: BROKEN: stock_adjustments differs from the events in 1 row: seq 3 has pet 1, 9 -> 2 \(delta -7\), .* where the events give pet 1, 3 -> 2 \(delta -1\)/,
  },
  {
    row: '`stock_adjustments` row removed',
    tamper: (ctx) => past(ctx, 'DELETE FROM stock_adjustments WHERE seq = 2'),
    alone: /^error: BROKEN: stock_adjustments differs from the events in 1 row: seq 2 has no row where the events give pet 1, 5 -> 3/,
  },
  {
    row: 'A trigger dropped or disabled',
    tamper: (ctx) =>
      ctx.target.tamper.asOwner(
        ctx.fresh.db,
        ctx.target.name === 'sqlite' ? 'DROP TRIGGER events_no_update' : 'ALTER TABLE events DISABLE TRIGGER events_no_update',
      ),
    alone: /^error: BROKEN: the append-only trigger events_no_update is missing or disabled/,
  },
  {
    row: 'PostgreSQL: rows added after `chain_head`',
    only: 'postgres',
    tamper: async (ctx) =>
      void (await forge(ctx, { version: 5, quantity: 1, actor: 'cli:ops', recordedAt: iso(60), type: 'StatusSet', moveHead: false })),
    alone: /^error: BROKEN at seq 5: chain_head \(seq 4\) is not at the newest event \(seq 5\)/,
  },
  {
    row: 'The clock set back',
    tamper: async (ctx) => void (await forge(ctx, { version: 5, quantity: 1, actor: 'cli:ops', recordedAt: iso(1), type: 'StatusSet' })),
    alone: 'passes',
    warning: /^warning: recorded_at goes back in time once, first at seq 5/m,
  },
  {
    row: 'Any of these, with the key log rewritten too (a key removed, the key log renumbered and rechained)',
    tamper: async (ctx) => {
      await past(ctx, "DELETE FROM api_key_events WHERE name = 'auditor'; DELETE FROM api_keys WHERE name = 'auditor'");
      await past(ctx, rewriteKeyChainSql(await keyLog(ctx), ctx.target.name));
    },
    alone: 'passes',
    kept: /^error: BROKEN at key seq \d+: /,
  },
  {
    row: "A QuantitySet forged in an active key's name after the newest kept head, chained and projected",
    tamper: async (ctx) => void (await forge(ctx, { version: 5, quantity: 1, actor: 'front', recordedAt: iso(60) })),
    alone: 'passes',
    kept: 'passes',
    receipts: true,
  },
  {
    row: 'A key row inserted with a chained, back-dated KeyCreated appended to the key log',
    tamper: async (ctx) => {
      const last = (await keyLog(ctx)).at(-1)!;
      const seq = Number(last[0]) + 1;
      const fields = {
        seq,
        type: 'KeyCreated',
        name: 'mallory',
        keyHash: hashKey(MALLORY),
        recordedAt: iso(0),
        actor: 'cli:ops',
        data: '',
      };
      const hash = keyEventHash({ prevHash: last[7], ...fields });
      await past(
        ctx,
        [
          `INSERT INTO api_key_events (seq, type, name, key_hash, recorded_at, actor, prev_hash, hash, data)
           VALUES (${seq}, 'KeyCreated', 'mallory', '${fields.keyHash}', '${iso(0)}', 'cli:ops', '${last[7]}', '${hash}', '')`,
          `INSERT INTO api_keys (name, hash, created_at, created_by) VALUES ('mallory', '${fields.keyHash}', '${iso(0)}', 'cli:ops')`,
          ctx.target.name === 'sqlite'
            ? `UPDATE sqlite_sequence SET seq = ${seq} WHERE name = 'api_key_events'`
            : `UPDATE key_chain_head SET seq = ${seq}, hash = '${hash}'`,
        ].join(';\n'),
      );
    },
    alone: 'passes',
    warning: new RegExp(
      `^warning: the key log's recorded_at goes back in time at key seq \\d+ \\(KeyCreated of "mallory" at ${iso(0)}, after `,
      'm',
    ),
    kept: 'passes',
    service: { key: () => MALLORY, refuses: false },
  },
  {
    row: 'A row added by hand to schema_migrations',
    tamper: (ctx) =>
      ctx.target.tamper.asOwner(
        ctx.fresh.db,
        "INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, '999-fake.sql', '2026-05-01T00:00:00.000Z')",
      ),
    alone: 'passes',
    warning: /^warning: .* lists schema version 999 in schema_migrations, which this version of petstore-inventory does not know/m,
  },
];

const hooks = {
  async beforeEach(ctx: C) {
    ctx.fresh = await ctx.target.fresh();
    await history(ctx);
    ctx.live = await ctx.target.open(ctx.fresh.db);
  },
  async afterEach(ctx: C) {
    await ctx.live.close();
    await ctx.fresh.cleanup();
  },
};
const table = targetSuites<Ctx>("the auditors' guide's table: each tampering and the check that catches it", hooks);

// PostgreSQL's rows on PostgreSQL alone: SQLite has no chain head to move.
const postgresOnly = targetSuites<Ctx>("the auditors' guide's table: PostgreSQL's own rows", hooks, [postgresTarget()]);

for (const r of ROWS) {
  (r.only === 'postgres' ? postgresOnly : table)(r.row, async (ctx) => {
    // Shown to the running service before the tampering too, as a key it has seen.
    if (r.service) await ctx.live.keys.authenticate(r.service.key(ctx));
    assert.equal(await receiptsCheck(ctx), [], 'the intact log holds every receipt');
    await r.tamper(ctx);
    expectRun([], ctx, r.alone, r.warning, 'verify-log alone');
    if (r.kept) expectRun(ctx.kept, ctx, r.kept, undefined, 'verify-log with the kept head');
    const found = await receiptsCheck(ctx);
    if (r.receipts) assert.ok(found.length > 0, 'the receipts check finds it');
    else assert.equal(found, [], 'the receipts check finds nothing');
    if (r.service) {
      const principal = await ctx.live.keys.authenticate(r.service.key(ctx));
      assert.is(principal === undefined, r.service.refuses, `the running service ${r.service.refuses ? 'refuses' : 'accepts'} the key`);
    }
  });
}

table.run();
postgresOnly.run();
