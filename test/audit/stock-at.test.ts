// scripts/stock-at: the stock of every pet as of a past moment, replayed from the log,
// on every store target: the same answer the projection gave then, and now.
import * as assert from 'uvu/assert';
import type { Command } from '../../src/domain/decide.ts';
import { entriesOf, seedSteps } from '../kit/fixtures.ts';
import { runScript, type ScriptResult } from '../kit/scripts.ts';
import { targetSuites } from '../kit/suites.ts';

const BIG = 9007199254740993n; // 2^53 + 1: a double would round it to ...992
const MAX = 9223372036854775807n;

interface Ctx {
  db: string;
  cleanup: () => Promise<void>;
}

const test = targetSuites<Ctx>('scripts/stock-at', {
  async beforeEach(ctx) {
    const fresh = await ctx.target.fresh();
    ctx.db = fresh.db;
    ctx.cleanup = fresh.cleanup;
    const track = (petId: bigint, quantity: number, status: 'available' | 'pending' = 'available'): Command => ({
      type: 'TrackPet',
      petId,
      quantity,
      status,
    });
    const set = (petId: bigint, quantity: number): Command => ({ type: 'SetQuantity', petId, quantity });
    // seq: 1-2 pets 1 and BIG at 09:00; 3 pet 1 -> 7 at 10:00; 4 BIG -> 12 at 11:00;
    // 5 pet 1 pending at 12:00; 6 MAX tracked (pending, 1) at 12:00:00.500; 7 pet 1 -> 3 at 13:00.
    await seedSteps(ctx, [
      { at: '2026-11-21T09:00:00.000Z', actor: 'cli:seed', requestId: 's', commands: [track(1n, 5), track(BIG, 0)] },
      { at: '2026-11-21T10:00:00.000Z', actor: 'alice', requestId: 'r1', commands: [set(1n, 7)] },
      { at: '2026-11-21T11:00:00.000Z', actor: 'bob', requestId: 'r2', commands: [set(BIG, 12)] },
      {
        at: '2026-11-21T12:00:00.000Z',
        actor: 'cli:seed',
        requestId: 's2',
        commands: [{ type: 'SetStatus', petId: 1n, status: 'pending' }],
      },
      { at: '2026-11-21T12:00:00.500Z', actor: 'cli:seed', requestId: 's3', commands: [track(MAX, 1, 'pending')] },
      { at: '2026-11-21T13:00:00.000Z', actor: 'alice', requestId: 'r3', commands: [set(1n, 3)] },
    ]);
  },
  afterEach: (ctx) => ctx.cleanup(),
});

function stockAt(db: string, args: string[]): Promise<ScriptResult> {
  return runScript('stock-at', args, { db });
}

/** The rows of a CSV listing, header checked and left out; without changed_at unless whole. */
async function csvAt(db: string, at: string, extra: string[] = [], whole = false): Promise<string[][]> {
  const r = await stockAt(db, ['--at', at, '--format', 'csv', ...extra]);
  assert.is(r.status, 0, r.stderr);
  assert.is(r.stderr, '', 'no warning');
  const [header, ...rows] = r.stdout.trimEnd().split('\n');
  assert.is(header, 'pet_id,quantity,status,version,changed_at');
  return rows.map((line) => line.split(',').slice(0, whole ? 5 : 4));
}

test('each moment gives the stock replayed up to it, inclusive', async ({ db }) => {
  assert.equal(await csvAt(db, '2026-11-21T08:59:59.999Z'), [], 'nothing tracked yet');
  assert.equal(await csvAt(db, '2026-11-21T09:00:00Z'), [
    ['1', '5', 'available', '1'],
    [String(BIG), '0', 'available', '1'],
  ]);
  assert.equal(await csvAt(db, '2026-11-21T10:00:00.000Z'), [
    ['1', '7', 'available', '2'],
    [String(BIG), '0', 'available', '1'],
  ]);
  // 12:00 at +01:00 is 11:00 UTC: offsets are honoured.
  assert.equal(await csvAt(db, '2026-11-21T12:00+01:00'), [
    ['1', '7', 'available', '2'],
    [String(BIG), '12', 'available', '2'],
  ]);
  assert.equal(await csvAt(db, '2026-11-21T12:00:00.4Z'), [
    ['1', '7', 'pending', '3'],
    [String(BIG), '12', 'available', '2'],
  ]);
  assert.equal(await csvAt(db, '2026-11-21T12:00:00.4999Z'), await csvAt(db, '2026-11-21T12:00:00.4Z'), 'not rounded up to .500');
  assert.equal(await csvAt(db, '2026-11-21T12:59:59Z'), [
    ['1', '7', 'pending', '3'],
    [String(BIG), '12', 'available', '2'],
    [String(MAX), '1', 'pending', '1'],
  ]);
});

test('a moment after the last event gives the stock as the projection has it now', async ({ db, target }) => {
  const rows = await csvAt(db, '2099-01-01', [], true);
  const store = await target.open(db, { readonly: true });
  try {
    const now = (await entriesOf(store)).map((e) => [String(e.petId), String(e.quantity), e.status, String(e.version), e.updatedAt]);
    assert.equal(rows, now);
  } finally {
    await store.close();
  }
});

test('--pet, and the table and jsonl formats, ids exact', async ({ db }) => {
  assert.equal(await csvAt(db, '2026-11-21T11:00:00Z', ['--pet', String(BIG)]), [[String(BIG), '12', 'available', '2']]);
  const jsonl = await stockAt(db, ['--at', '2026-11-21T11:00:00Z', '--pet', String(BIG), '--format', 'jsonl']);
  assert.is(jsonl.status, 0, jsonl.stderr);
  assert.is(jsonl.stdout, `{"pet_id":${BIG},"quantity":12,"status":"available","version":2,"changed_at":"2026-11-21T11:00:00.000Z"}\n`);
  const table = await stockAt(db, ['--at', '2026-11-21T13:00:00Z']);
  assert.is(table.status, 0, table.stderr);
  assert.is(
    table.stdout,
    [
      '             PET_ID  QUANTITY  STATUS     VERSION  CHANGED_AT',
      '                  1         3  pending          4  2026-11-21T13:00:00.000Z',
      '   9007199254740993        12  available        2  2026-11-21T11:00:00.000Z',
      '9223372036854775807         1  pending          1  2026-11-21T12:00:00.500Z',
      '',
    ].join('\n'),
  );
});

test('a clock set back: the replay stops at the first event after TIME and warns of the later ones', async (ctx) => {
  const { db } = ctx;
  // seq 8 pet 1 -> 20 at 14:00; then the clock reads 13:30 again: 9 pet 1 available,
  // 10 BIG -> 0. Folding 9 onto version 4 would give pet 1 a version 6 with quantity 3,
  // a row it never had (its version 6 has quantity 20).
  await seedSteps(ctx, [
    { at: '2026-11-21T14:00:00.000Z', actor: 'alice', requestId: 'r4', commands: [{ type: 'SetQuantity', petId: 1n, quantity: 20 }] },
    {
      at: '2026-11-21T13:30:00.000Z',
      actor: 'bob',
      requestId: 'r5',
      commands: [
        { type: 'SetStatus', petId: 1n, status: 'available' },
        { type: 'SetQuantity', petId: BIG, quantity: 0 },
      ],
    },
  ]);
  const warning = (n: string) =>
    `warning: ${n} recorded at or before 2026-11-21T13:45:00.000Z came after one recorded later (the clock was set back): left out\n`;
  const all = await stockAt(db, ['--at', '2026-11-21T13:45:00Z', '--format', 'csv']);
  assert.is(all.status, 0, all.stderr);
  assert.is(all.stderr, warning('2 events'));
  assert.is(
    all.stdout,
    [
      'pet_id,quantity,status,version,changed_at',
      '1,3,pending,4,2026-11-21T13:00:00.000Z',
      `${BIG},12,available,2,2026-11-21T11:00:00.000Z`,
      `${MAX},1,pending,1,2026-11-21T12:00:00.500Z`,
      '',
    ].join('\n'),
  );
  // --pet counts only its own events left out, and gives that pet's row of the whole listing.
  const one = await stockAt(db, ['--at', '2026-11-21T13:45:00Z', '--format', 'csv', '--pet', String(BIG)]);
  assert.is(one.stderr, warning('1 event'));
  assert.is(one.stdout, `pet_id,quantity,status,version,changed_at\n${BIG},12,available,2,2026-11-21T11:00:00.000Z\n`);
  // Before the set-back events' time nothing is left out; after the last, everything counts.
  assert.equal(await csvAt(db, '2026-11-21T13:00:00Z'), [
    ['1', '3', 'pending', '4'],
    [String(BIG), '12', 'available', '2'],
    [String(MAX), '1', 'pending', '1'],
  ]);
  assert.equal(await csvAt(db, '2026-11-21T14:00:00Z'), [
    ['1', '20', 'available', '6'],
    [String(BIG), '0', 'available', '3'],
    [String(MAX), '1', 'pending', '1'],
  ]);
});

test('usage errors exit 2 and name the problem', async ({ db }) => {
  for (const [args, message] of [
    [[], /--at TIME is required/],
    [['--at', 'yesterday'], /--at: invalid TIME "yesterday"/],
    [['--at', '2026-11-21T10:00'], /invalid TIME/],
    [['--at', '2026-02-30'], /invalid TIME/],
    [['--at', '2026-11-21', '--pet', '007'], /--pet: invalid PETID "007"/],
    [['--at', '2026-11-21', '--format', 'xml'], /--format must be table, csv, jsonl/],
    [['--at', '2026-11-21', 'extra'], /unexpected argument "extra"/],
  ] as const) {
    const r = await stockAt(db, [...args]);
    assert.is(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, message);
  }
});

test.run();
