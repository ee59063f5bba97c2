// scripts/audit's output formats (table, CSV, JSON lines) and an empty listing, end to end
// on every store (test/kit/audit.ts).
import * as assert from 'uvu/assert';
import { seedSteps, type Step } from '../kit/fixtures.ts';
import { parseJson } from '../kit/http.ts';
import { auditSuite, BIG, audit, expectExit, track, set, seedFixture } from '../kit/audit.ts';

const test = auditSuite('scripts/audit: formats');

test('--format table (the default): a header and aligned columns, numbers right-aligned', async (ctx) => {
  await seedFixture(ctx);
  const r = await audit(['--db', ctx.db]);
  expectExit(r, 0, 'audit');
  assert.is(
    r.stdout,
    [
      'SEQ  RECORDED_AT                         PET_ID  PREVIOUS_QUANTITY  QUANTITY  DELTA  ACTOR  REQUEST_ID',
      '  4  2026-11-21T10:00:00.000Z                 1                  5         7      2  alice  r1',
      '  5  2026-11-21T10:00:00.001Z                 2                 10         4     -6  bob    r2',
      '  6  2026-11-21T11:59:59.999Z  9007199254740993                  0        12     12  alice  r3',
      '  7  2026-11-21T12:00:00.000Z                 1                  7         7      0  bob    r4',
      '  9  2026-11-21T13:00:00.000Z                 1                  7         3     -4  alice  r5',
      '',
    ].join('\n'),
  );
  assert.is(r.stderr, '');
  const explicit = await audit(['--format', 'table', '--db', ctx.db]);
  expectExit(explicit, 0, 'audit --format table');
  assert.is(explicit.stdout, r.stdout);
});

test('--format table measures the first 500 rows; a longer value after them overflows', async (ctx) => {
  const steps: Step[] = [{ at: '2026-11-21T09:00:00.000Z', actor: 'cli:seed', requestId: 'seed', commands: [track(1n, 0)] }];
  for (let i = 1; i <= 501; i++) {
    steps.push({
      at: '2026-11-21T10:00:00.000Z',
      actor: i === 501 ? 'a-much-longer-actor' : 'bob',
      requestId: `r${i}`,
      commands: [set(1n, i)],
    });
  }
  await seedSteps(ctx, steps);
  const r = await audit(['--db', ctx.db]);
  expectExit(r, 0, 'audit');
  const lines = r.stdout.trimEnd().split('\n');
  assert.is(lines.length, 502);
  const requestColumn = lines[0]!.indexOf('REQUEST_ID');
  for (const line of lines.slice(1, 501)) assert.is(line.indexOf(' r') + 1, requestColumn, line);
  assert.is(lines[1], '  2  2026-11-21T10:00:00.000Z       1                  0         1      1  bob    r1');
  assert.is(lines[501], '502  2026-11-21T10:00:00.000Z       1                500       501      1  a-much-longer-actor  r501');
});

test('--format csv: RFC 4180 with LF, an actor with a comma, quotes and a newline quoted', async (ctx) => {
  await seedSteps(ctx, [
    { at: '2026-11-21T09:00:00.000Z', actor: 'cli:seed', requestId: 'seed', commands: [track(1n, 5), track(BIG, 1)] },
    // Key names cannot hold a comma, but cli:<user> can be any string.
    { at: '2026-11-21T10:00:00.000Z', actor: 'cli:Doe, "Jo"\nsecond line', requestId: 'r1', commands: [set(1n, 2)] },
    { at: '2026-11-21T10:00:01.000Z', actor: 'bob', requestId: 'a:b.c-1', commands: [set(BIG, 9)] },
  ]);
  const r = await audit(['--format', 'csv', '--db', ctx.db]);
  expectExit(r, 0, 'audit --format csv');
  assert.is(
    r.stdout,
    'seq,recorded_at,pet_id,previous_quantity,quantity,delta,actor,request_id\n' +
      '3,2026-11-21T10:00:00.000Z,1,5,2,-3,"cli:Doe, ""Jo""\nsecond line",r1\n' +
      '4,2026-11-21T10:00:01.000Z,9007199254740993,1,9,8,bob,a:b.c-1\n',
  );
  assert.not.match(r.stdout, /\r/, 'LF line ends');
});

test('--format csv: a text cell that a spreadsheet would run as a formula starts with a quote', async (ctx) => {
  await seedSteps(ctx, [
    { at: '2026-11-21T09:00:00.000Z', actor: 'cli:seed', requestId: 'seed', commands: [track(1n, 5)] },
    // X-Request-Id allows [A-Za-z0-9._:-]: "-2-3" is a sane token, and a formula.
    { at: '2026-11-21T10:00:00.000Z', actor: 'bob', requestId: '-2-3', commands: [set(1n, 2)] },
    { at: '2026-11-21T10:00:01.000Z', actor: "=cmd|' /C calc'!A0", requestId: '=1+1', commands: [set(1n, 4)] },
    { at: '2026-11-21T10:00:02.000Z', actor: '+1', requestId: '@SUM(A1:A2)', commands: [set(1n, 4)] },
    { at: '2026-11-21T10:00:03.000Z', actor: '\tcli:tab', requestId: '\rcr', commands: [set(1n, 1)] },
    { at: '2026-11-21T10:00:04.000Z', actor: '-x, "y"', requestId: 'a-b=c', commands: [set(1n, 0)] },
  ]);
  const r = await audit(['--format', 'csv', '--db', ctx.db]);
  expectExit(r, 0, 'audit --format csv');
  assert.is(
    r.stdout,
    [
      'seq,recorded_at,pet_id,previous_quantity,quantity,delta,actor,request_id',
      // A negative delta is a number: -3, neither quoted nor prefixed.
      "2,2026-11-21T10:00:00.000Z,1,5,2,-3,bob,'-2-3",
      "3,2026-11-21T10:00:01.000Z,1,2,4,2,'=cmd|' /C calc'!A0,'=1+1",
      "4,2026-11-21T10:00:02.000Z,1,4,4,0,'+1,'@SUM(A1:A2)",
      `5,2026-11-21T10:00:03.000Z,1,4,1,-3,'\tcli:tab,"'\rcr"`,
      `6,2026-11-21T10:00:04.000Z,1,1,0,-1,"'-x, ""y""",a-b=c`,
      '',
    ].join('\n'),
  );
  // The other formats are not spreadsheets: they keep the text as it is.
  const jsonl = await audit(['--format', 'jsonl', '--db', ctx.db]);
  expectExit(jsonl, 0, 'audit --format jsonl');
  assert.is(parseJson<{ request_id: string }>(jsonl.stdout.split('\n')[0]!).request_id, '-2-3');
});

test('--format jsonl: one object per line, bigints as exact bare numbers', async (ctx) => {
  await seedSteps(ctx, [
    { at: '2026-11-21T09:00:00.000Z', actor: 'cli:seed', requestId: 'seed', commands: [track(BIG, 1), track(9223372036854775807n, 0)] },
    { at: '2026-11-21T10:00:00.000Z', actor: 'cli:Doe, "Jo"\\', requestId: 'r1', commands: [set(BIG, 2147483647)] },
    { at: '2026-11-21T10:00:00.500Z', actor: 'bob', requestId: 'r2', commands: [set(9223372036854775807n, 0)] },
  ]);
  const r = await audit(['--format', 'jsonl', '--db', ctx.db]);
  expectExit(r, 0, 'audit --format jsonl');
  assert.is(
    r.stdout,
    '{"seq":3,"recorded_at":"2026-11-21T10:00:00.000Z","pet_id":9007199254740993,"previous_quantity":1,' +
      '"quantity":2147483647,"delta":2147483646,"actor":"cli:Doe, \\"Jo\\"\\\\","request_id":"r1"}\n' +
      '{"seq":4,"recorded_at":"2026-11-21T10:00:00.500Z","pet_id":9223372036854775807,"previous_quantity":0,' +
      '"quantity":0,"delta":0,"actor":"bob","request_id":"r2"}\n',
  );
  const first = parseJson<{ actor: string; quantity: number }>(r.stdout.split('\n')[0]!);
  assert.is(first.actor, 'cli:Doe, "Jo"\\');
  assert.is(first.quantity, 2147483647);
});

test('no matching rows: exit 0; a table or CSV has its header alone, JSON lines nothing', async (ctx) => {
  await seedSteps(ctx, [{ at: '2026-11-21T09:00:00.000Z', actor: 'cli:seed', requestId: 'seed', commands: [track(1n, 5)] }]);
  const [table, csv, jsonl] = await Promise.all([
    audit(['--db', ctx.db]),
    audit(['--format', 'csv', '--pet', '2', '--db', ctx.db]),
    audit(['--format', 'jsonl', '--actor', 'nobody', '--db', ctx.db]),
  ]);
  expectExit(table, 0, 'audit of a log without adjustments');
  assert.is(table.stdout, 'SEQ  RECORDED_AT  PET_ID  PREVIOUS_QUANTITY  QUANTITY  DELTA  ACTOR  REQUEST_ID\n');
  expectExit(csv, 0, 'audit --format csv --pet 2');
  assert.is(csv.stdout, 'seq,recorded_at,pet_id,previous_quantity,quantity,delta,actor,request_id\n');
  expectExit(jsonl, 0, 'audit --format jsonl --actor nobody');
  assert.is(jsonl.stdout, '');
  for (const r of [table, csv, jsonl]) assert.is(r.stderr, '');
});

test.run();
