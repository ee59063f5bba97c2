// scripts/audit's filters (--pet, --actor, --since, --until and their combination), end to
// end on every store (test/kit/audit.ts).
import { auditSuite, BIG, seedFixture, expectListings } from '../kit/audit.ts';

const test = auditSuite('scripts/audit: filters');

test('without filters: every QuantitySet in seq order, confirmed counts included, StatusSet not', async (ctx) => {
  await seedFixture(ctx);
  await expectListings(ctx.db, [[[], [4, 5, 6, 7, 9]]]);
});

test('--pet alone: one pet, an id above 2^53 exactly; an untracked pet is zero rows', async (ctx) => {
  await seedFixture(ctx);
  await expectListings(ctx.db, [
    [
      ['--pet', '1'],
      [4, 7, 9],
    ],
    [['--pet', String(BIG)], [6]],
    [['--pet', String(BIG - 1n)], [], 'the neighbour of 2^53+1 is another pet'],
  ]);
});

test('--actor alone: exact match, case-sensitive', async (ctx) => {
  await seedFixture(ctx);
  await expectListings(ctx.db, [
    [
      ['--actor', 'alice'],
      [4, 6, 9],
    ],
    [['--actor', 'Alice'], []],
    [['--actor', 'ali'], [], 'no prefix match'],
    [['--actor', "alice' OR '1'='1"], [], 'a value, never SQL'],
  ]);
});

test('--since is inclusive and --until exclusive, to the millisecond', async (ctx) => {
  await seedFixture(ctx);
  await expectListings(ctx.db, [
    [
      ['--since', '2026-11-21T10:00:00.001Z'],
      [5, 6, 7, 9],
    ],
    [
      ['--since', '2026-11-21T10:00:00.002Z'],
      [6, 7, 9],
    ],
    [['--until', '2026-11-21T12:00:00Z'], [4, 5, 6], '12:00:00.000 itself is out'],
    [
      ['--until', '2026-11-21T12:00:00.001Z'],
      [4, 5, 6, 7],
    ],
    [['--since', '2026-11-21T11:59:59Z'], [6, 7, 9], 'without milliseconds the bound is .000'],
    [['--since', '2026-11-21T12:00Z', '--until', '2026-11-21T12:00:00.000Z'], [], 'an empty window'],
  ]);
});

test('times with an offset or a date alone are converted to UTC before comparing', async (ctx) => {
  await seedFixture(ctx);
  await expectListings(ctx.db, [
    [['--since', '2026-11-21T14:00:00+02:00'], [7, 9], '14:00+02:00 is 12:00Z, inclusive'],
    [['--until', '2026-11-21T14:00:00+02:00'], [4, 5, 6], '14:00+02:00 is 12:00Z, exclusive'],
    [['--until', '2026-11-21T11:00:00.000-01:00'], [4, 5, 6], '11:00-01:00 is 12:00Z'],
    [['--since', '2026-11-22T00:30:00+01:00'], [], '00:30+01:00 on the 22nd is 23:30Z on the 21st'],
    [['--since', '2026-11-21', '--until', '2026-11-22'], [4, 5, 6, 7, 9], 'a date alone is midnight UTC'],
    [['--since', '2026-11-22'], []],
  ]);
});

test('every ISO 8601 offset form: Z, +hh:mm, +hhmm, +hh; seconds and fractions optional', async (ctx) => {
  await seedFixture(ctx);
  await expectListings(ctx.db, [
    [['--since', '2026-11-21T14:00:00+0200'], [7, 9], '+0200 is +02:00'],
    [['--since', '2026-11-21T14:00:00+02'], [7, 9], '+02 is +02:00'],
    [['--since', '2026-11-21T14:00+02'], [7, 9], 'no seconds'],
    [['--since', '2026-11-21T14:00:00.000+0200'], [7, 9], 'milliseconds and +hhmm'],
    [['--until', '2026-11-21T11:00:00-0100'], [4, 5, 6], '-0100 is -01:00'],
    [['--until', '2026-11-21T11:00-01'], [4, 5, 6], '-01 is -01:00'],
    [['--until', '2026-11-21T17:30:00.001+0530'], [4, 5, 6, 7], 'a half-hour offset'],
    [['--since', '2026-11-21T10:00:00.0005Z'], [5, 6, 7, 9], 'a finer fraction rounds up: .0005 is after .000'],
    [['--until', '2026-11-21T10:00:00.0005Z'], [4], '.000 is before .0005'],
    [['--since', '2026-11-21T10:00:00.000000001Z'], [5, 6, 7, 9], 'nanoseconds'],
    [['--since', '2026-11-21T10:00:00.5Z'], [6, 7, 9], 'a tenth'],
  ]);
});

test('filters combine with AND', async (ctx) => {
  await seedFixture(ctx);
  await expectListings(ctx.db, [
    [
      ['--pet', '1', '--actor', 'alice'],
      [4, 9],
    ],
    [['--actor', 'alice', '--since', '2026-11-21T10:00:00.001Z', '--until', '2026-11-21T13:00:00Z'], [6]],
    [
      ['--pet', '1', '--actor', 'alice', '--since', '2026-11-21T11:00:00+01:00', '--until', '2026-11-21T13:00:00.001Z'],
      [4, 9],
    ],
    [['--pet', '1', '--since', '2026-11-21T10:00:00.001Z', '--until', '2026-11-21T13:00:00Z'], [7]],
    [['--pet', '2', '--actor', 'alice'], []],
  ]);
});

test.run();
