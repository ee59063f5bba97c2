// What the chain alone cannot show, which scripts/verify-log checks on every store: an
// edited projection, a missing or disabled append-only trigger, an entry whose versions
// are not 1, 2, 3, …, an event in the name of a key that was revoked (or was no key) at
// its time, PostgreSQL's chain head not at the newest event; and time going backwards in
// recorded_at, which is only a warning. Each forged event below is chained correctly, as
// someone who knows the published encoding would append it.
import * as assert from 'uvu/assert';
import { commandsOn } from '../kit/fixtures.ts';
import { postgresTarget } from '../kit/postgres-target.ts';
import { runScriptSync } from '../kit/scripts.ts';
import type { FreshDatabase } from '../kit/stores.ts';
import { targetSuites, type OnTarget } from '../kit/suites.ts';
import { forgedEventSql, forgedProjectionSql, regrowTree, type ForgedEvent } from '../kit/tamper.ts';

interface Ctx {
  fresh: FreshDatabase;
}

const T0 = Date.parse('2026-05-01T00:00:00.000Z');
const iso = (seconds: number) => new Date(T0 + seconds * 1000).toISOString();

/** Key "till" sets pet 1's quantity twice and is revoked (at 00:00:06); all on a fixed clock. */
async function history(ctx: Ctx & OnTarget): Promise<void> {
  let t = T0;
  const now = () => (t += 1000);
  const store = await ctx.target.open(ctx.fresh.db, { now });
  try {
    await store.keys.create('till', 'cli:ops');
    const commands = commandsOn(store, now);
    await commands.handle({ type: 'TrackPet', petId: 1n, quantity: 5, status: 'available' }, { actor: 'cli:ops', requestId: 'r1' });
    await commands.handle({ type: 'SetQuantity', petId: 1n, quantity: 3 }, { actor: 'till', requestId: 'r2' });
    await commands.handle({ type: 'SetQuantity', petId: 1n, quantity: 2 }, { actor: 'till', requestId: 'r3' });
    assert.is(await store.keys.revoke('till', 'cli:ops'), 'revoked');
  } finally {
    await store.close();
  }
}

interface Forged extends ForgedEvent {
  /** Also moves PostgreSQL's chain head to the forged event (as a careful forger would). */
  moveHead?: boolean;
  /** Also sets the projection to what the forged event says. */
  project?: boolean;
}

/** Appends an event of pet 1 (a QuantitySet unless told) after the newest event, chained, past every guard. */
async function forge(ctx: Ctx & OnTarget, f: Forged): Promise<number> {
  const store = await ctx.target.open(ctx.fresh.db, { readonly: true });
  let last: [bigint, string] = [0n, ''];
  try {
    for await (const page of store.chainRows()) for (const row of page) last = [row[0], row[9]!];
  } finally {
    await store.close();
  }
  const seq = last[0] + 1n;
  const forged = forgedEventSql(seq, last[1], f);
  const sql = [forged.sql];
  if (ctx.target.name === 'postgres' && f.moveHead !== false) sql.push(`UPDATE chain_head SET seq = ${seq}, hash = '${forged.hash}'`);
  if (f.project) sql.push(forgedProjectionSql(f, seq));
  await ctx.target.tamper.pastGuards(ctx.fresh.db, sql.join(';\n'));
  await regrowTree(ctx.target, ctx.fresh.db);
  return Number(seq);
}

function verifyLog(ctx: Ctx) {
  return runScriptSync('verify-log', [], { db: ctx.fresh.db });
}

function expectBroken(ctx: Ctx, pattern: RegExp): void {
  const r = verifyLog(ctx);
  assert.is(r.status, 1, r.stderr);
  assert.match(r.stderr, pattern);
  assert.is(r.stdout, '', 'no digest for a broken log');
}

const checks = targetSuites<Ctx>('verify-log: what the chain cannot show', {
  async beforeEach(ctx) {
    ctx.fresh = await ctx.target.fresh();
    await history(ctx);
  },
  async afterEach(ctx) {
    await ctx.fresh.cleanup();
  },
});

checks('an intact log passes every check', (ctx) => {
  const r = verifyLog(ctx);
  assert.is(r.status, 0, r.stderr);
  assert.match(r.stderr, /\nok: the projection and stock_adjustments are the replay of the log; every append-only trigger is in place\n/);
  assert.not.match(r.stderr, /warning/);
});

checks('an edited projection is BROKEN', async (ctx) => {
  await ctx.target.tamper.asOwner(ctx.fresh.db, 'UPDATE inventory SET quantity = 99 WHERE pet_id = 1');
  expectBroken(
    ctx,
    /^error: BROKEN: the projection \(inventory\) differs from the replay of the log in 1 entry: entry 1 has quantity 99, status available, version 3 where the log gives quantity 2, status available, version 3 \(quantity differs\)/,
  );
});

checks('a projection whose time alone is edited is BROKEN, and both checks name the column', async (ctx) => {
  await ctx.target.tamper.asOwner(ctx.fresh.db, "UPDATE inventory SET updated_at = '2020-01-01T00:00:00.000Z' WHERE pet_id = 1");
  expectBroken(
    ctx,
    /^error: BROKEN: the projection \(inventory\) differs from the replay of the log in 1 entry: entry 1 has quantity 2, status available, version 3, updated_at 2020-01-01T00:00:00\.000Z where the log gives quantity 2, status available, version 3, updated_at \S+ \(updated_at differs\)/,
  );
  const check = runScriptSync('rebuild-projection', ['--check'], { db: ctx.fresh.db });
  assert.is(check.status, 1, check.stderr);
  assert.match(
    check.stdout,
    /\n {2}pet 1: quantity 2, available, version 3, updated_at 2020-01-01T00:00:00\.000Z -> quantity 2, available, version 3, updated_at 20\d\d-/,
  );
});

checks('a missing or disabled append-only trigger is BROKEN', async (ctx) => {
  const sql = ctx.target.name === 'sqlite' ? 'DROP TRIGGER events_no_update' : 'ALTER TABLE events DISABLE TRIGGER events_no_update';
  await ctx.target.tamper.asOwner(ctx.fresh.db, sql);
  expectBroken(ctx, /^error: BROKEN: the append-only trigger events_no_update is missing or disabled/);
});

checks('an entry whose versions skip one is BROKEN, though its event is chained', async (ctx) => {
  const seq = await forge(ctx, { version: 5, quantity: 1, actor: 'cli:ops', recordedAt: iso(10), type: 'StatusSet', project: true });
  expectBroken(ctx, new RegExp(`^error: BROKEN at seq ${seq}: entry 1 has version 5 after version 3: an entry's versions are 1, 2, 3, …`));
});

checks('an event in the name of a revoked key is BROKEN, though it is chained and projected', async (ctx) => {
  const seq = await forge(ctx, { version: 4, quantity: 1, actor: 'till', recordedAt: iso(30), project: true });
  expectBroken(ctx, new RegExp(`^error: BROKEN at seq ${seq}: its actor "till" was revoked at ${iso(5)}, before the event`));
});

// Times are instants, compared to the millisecond; a margin of the request budget
// (a request authenticated before a revocation commits after it; instances' clocks
// differ) is a warning, past it BROKEN. "till" was created at 00:00:01, revoked at 00:00:05.
const MARGIN_MS = 5_000;
const at = (ms: number) => new Date(T0 + ms).toISOString();
for (const [when, recordedAt, verdict] of [
  ['at the very instant of its revocation', at(5_000), 'ok'],
  [
    '1 ms after its revocation',
    at(5_001),
    /an event within 5 s of its actor's revocation or creation, first seq 4: its actor "till" was revoked 1 ms before it/,
  ],
  ['the whole margin after its revocation', at(5_000 + MARGIN_MS), /its actor "till" was revoked 5000 ms before it/],
  ['1 ms past the margin after its revocation', at(5_001 + MARGIN_MS), /^error: BROKEN at seq 4: its actor "till" was revoked at/],
  ['at the very instant of its creation', at(1_000), 'ok'],
  ['within the margin before its creation (a clock behind)', at(1_000 - MARGIN_MS), /its actor "till" became a key 5000 ms after it/],
  ['past the margin before its creation', at(999 - MARGIN_MS), /^error: BROKEN at seq 4: its actor "till" became a key only at/],
] as const) {
  checks(
    `an event in a key's name ${when}: ${verdict === 'ok' ? 'no warning about its actor' : String(verdict).includes('BROKEN') ? 'BROKEN' : 'a warning'}`,
    async (ctx) => {
      await forge(ctx, { version: 4, quantity: 1, actor: 'till', recordedAt, project: true });
      const r = verifyLog(ctx);
      if (verdict !== 'ok' && verdict.source.includes('BROKEN')) {
        assert.is(r.status, 1, r.stderr);
        assert.match(r.stderr, verdict);
        return;
      }
      assert.is(r.status, 0, r.stderr);
      if (verdict === 'ok') assert.not.match(r.stderr, /actor/);
      else assert.match(r.stderr, new RegExp(`^warning: .*${verdict.source}.*beyond 5 s it is BROKEN\\)$`, 'm'));
    },
  );
}

checks('an event in the name of no key is BROKEN', async (ctx) => {
  const seq = await forge(ctx, { version: 4, quantity: 1, actor: 'mallory', recordedAt: iso(10), project: true });
  expectBroken(ctx, new RegExp(`^error: BROKEN at seq ${seq}: its actor "mallory" is no key of the key log`));
});

checks('time going backwards in recorded_at is a warning, not BROKEN', async (ctx) => {
  const seq = await forge(ctx, { version: 4, quantity: 1, actor: 'cli:ops', recordedAt: iso(2), type: 'StatusSet', project: true });
  const r = verifyLog(ctx);
  assert.is(r.status, 0, r.stderr);
  assert.match(r.stderr, new RegExp(`^warning: recorded_at goes back in time once, first at seq ${seq} \\(${iso(2)}, after ${iso(4)}\\)`));
});

checks('a row added by hand to schema_migrations stops neither verify-log nor audit nor stock-at, which say what it is', async (ctx) => {
  await ctx.target.tamper.asOwner(
    ctx.fresh.db,
    "INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, '999-fake.sql', '2026-05-01T00:00:00.000Z')",
  );
  const warning =
    /^warning: .* lists schema version 999 in schema_migrations, which this version of petstore-inventory does not know \(a newer version upgraded it, or the row was added by hand\)/;
  for (const [command, args] of [
    ['verify-log', []],
    ['audit', ['--pet', '1']],
    ['stock-at', ['--at', iso(10)]],
  ] as const) {
    const r = runScriptSync(command, [...args], { db: ctx.fresh.db });
    assert.is(r.status, 0, `${command}: ${r.stderr}`);
    assert.match(r.stderr, warning, command);
    assert.not.match(r.stderr, /use the newer version that upgraded it/, command);
    assert.ok(r.stdout.length > 0, `${command} printed its answer`);
  }
});

checks("a key's row deleted and inserted again under its name: BROKEN, naming the key", async (ctx) => {
  await ctx.target.tamper.pastGuards(
    ctx.fresh.db,
    `DELETE FROM api_keys WHERE name = 'till';
     INSERT INTO api_keys (name, hash, created_at, created_by) VALUES ('till', '${'a'.repeat(64)}', '${iso(1)}', 'cli:ops')`,
  );
  const r = verifyLog(ctx);
  assert.is(r.status, 1, r.stderr);
  assert.is(
    r.stderr,
    'error: BROKEN at key seq 1: api_keys row of key "till" differs from its KeyCreated event: it was changed or recreated\n',
  );
});

checks.run();

const heads = targetSuites<Ctx>(
  'verify-log: PostgreSQL chain_head',
  {
    async beforeEach(ctx) {
      ctx.fresh = await ctx.target.fresh();
      await history(ctx);
    },
    async afterEach(ctx) {
      await ctx.fresh.cleanup();
    },
  },
  [postgresTarget()],
);

heads('chain_head not at the newest event is BROKEN', async (ctx) => {
  await forge(ctx, { version: 4, quantity: 1, actor: 'cli:ops', recordedAt: iso(10), type: 'StatusSet', project: true, moveHead: false });
  expectBroken(ctx, /^error: BROKEN at seq 4: chain_head \(seq 3\) is not at the newest event \(seq 4\)/);
});

heads('chain_head moved back with its hash kept is BROKEN', async (ctx) => {
  await ctx.target.tamper.pastGuards(ctx.fresh.db, 'UPDATE chain_head SET seq = 1');
  expectBroken(
    ctx,
    /^error: BROKEN at seq 3: chain_head \(seq 1\) is not at the newest event \(seq 3\): its seq or hash is not that event's/,
  );
});

heads.run();
