// End-to-end tests of scripts/audit: each test seeds a fresh database of its store target
// in-process, with an injected clock so that recorded_at is known to the millisecond, closes it, and
// runs the real wrapper script as a child process; the outcome is judged by exit status,
// standard output and error, and by the database file being left as it was.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { Command } from '../src/domain/decide.ts';
import { commandsOn, seedSteps, type Step } from './kit/fixtures.ts';
import { parseJson } from './kit/http.ts';
import { root, scriptPath, tempDir, type TempDir } from './kit/paths.ts';
import { runScript, type ScriptResult as Result } from './kit/scripts.ts';
import { sqliteTarget } from './kit/sqlite-target.ts';
import type { StoreTarget } from './kit/stores.ts';
import { targetSuites, type OnTarget } from './kit/suites.ts';
import { needing, tools } from './kit/tools.ts';

const BIG = 9007199254740993n; // 2^53 + 1: a double would round it to ...992

/** Runs scripts/audit with args; INVENTORY_DB is unset unless env sets it. */
function audit(args: string[], env: Record<string, string> = {}): Promise<Result> {
  return runScript('audit', args, { env });
}

function expectExit(r: Result, status: number, what: string): void {
  assert.is(r.status, status, `${what}: exit ${r.status}, expected ${status}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
}

interface Ctx {
  db: string;
  cleanup: () => Promise<void>;
}

const test = targetSuites<Ctx>('scripts/audit', {
  async beforeEach(ctx) {
    const fresh = await ctx.target.fresh();
    ctx.db = fresh.db;
    ctx.cleanup = fresh.cleanup;
  },
  afterEach: (ctx) => ctx.cleanup(),
});

// What only a database file has: its path, its bytes.
const files = suite<{ dir: TempDir; db: string; target: StoreTarget }>('scripts/audit on the file (SQLite only: paths and bytes)');
files.before.each((ctx) => {
  ctx.dir = tempDir('inventory-audit-');
  ctx.db = ctx.dir.path('inventory.db');
  ctx.target = sqliteTarget();
});
files.after.each((ctx) => {
  ctx.dir.cleanup();
});

const track = (petId: bigint, quantity: number): Command => ({ type: 'TrackPet', petId, quantity, status: 'available' });
const set = (petId: bigint, quantity: number): Command => ({ type: 'SetQuantity', petId, quantity });

// The fixture most tests share. Stock adjustments (seq: pet, previous -> new, actor, time):
//   4: pet 1    5 -> 7   alice        10:00:00.000Z
//   5: pet 2   10 -> 4   bob          10:00:00.001Z
//   6: BIG      0 -> 12  alice        11:59:59.999Z
//   7: pet 1    7 -> 7   bob          12:00:00.000Z  (a confirmed count; seq 8, a StatusSet, is not a row)
//   9: pet 1    7 -> 3   alice        13:00:00.000Z
async function seedFixture(on: OnTarget & { db: string }): Promise<void> {
  await seedSteps(on, [
    { at: '2026-11-21T09:00:00.000Z', actor: 'cli:seed', requestId: 'seed', commands: [track(1n, 5), track(2n, 10), track(BIG, 0)] },
    { at: '2026-11-21T10:00:00.000Z', actor: 'alice', requestId: 'r1', commands: [set(1n, 7)] },
    { at: '2026-11-21T10:00:00.001Z', actor: 'bob', requestId: 'r2', commands: [set(2n, 4)] },
    { at: '2026-11-21T11:59:59.999Z', actor: 'alice', requestId: 'r3', commands: [set(BIG, 12)] },
    {
      at: '2026-11-21T12:00:00.000Z',
      actor: 'bob',
      requestId: 'r4',
      commands: [set(1n, 7), { type: 'SetStatus', petId: 1n, status: 'pending' }],
    },
    { at: '2026-11-21T13:00:00.000Z', actor: 'alice', requestId: 'r5', commands: [set(1n, 3)] },
  ]);
}

/** The seq column of a CSV listing (its first field), header left out. */
function seqs(r: Result): number[] {
  return r.stdout
    .split('\n')
    .slice(1)
    .filter((line) => line !== '')
    .map((line) => Number(line.split(',')[0]));
}

/**
 * Runs each listing at once (they only read; a process start is most of their time) and
 * checks the seqs each one printed.
 */
async function expectListings(db: string, cases: [args: string[], seqs: number[], why?: string][]): Promise<void> {
  const results = await Promise.all(cases.map(([args]) => audit([...args, '--format', 'csv', '--db', db])));
  cases.forEach(([args, expected, why], i) => {
    const what = `audit ${args.join(' ')}${why ? ` (${why})` : ''}`;
    expectExit(results[i]!, 0, what);
    assert.equal(seqs(results[i]!), expected, what);
  });
}

function sha256(path: string): string {
  return createHash('sha256').update(readFileSync(path)).digest('hex');
}

// ---------------------------------------------------------------------------------------

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

test('usage errors exit 2 with one error line and see --help, nothing on stdout; --help exits 0', async (ctx) => {
  await seedFixture(ctx);
  const cases: [string[], RegExp][] = [
    [['--format', 'xml'], /--format must be table, csv, jsonl, not "xml"/],
    [['--pet', 'abc'], /--pet: invalid PETID "abc"/],
    [['--pet', '007'], /--pet: invalid PETID/],
    [['--pet', '9223372036854775808'], /--pet: invalid PETID/],
    [['--since', 'yesterday'], /--since: invalid TIME "yesterday"/],
    [['--since', '2026-02-30'], /--since: invalid TIME/],
    [['--since', '2026-11-21T10:00:00'], /a time of day needs Z or an offset/],
    [['--since', '2026-11-21T24:00:00Z'], /--since: invalid TIME/],
    [['--until', '2026-11-21 10:00:00Z'], /--until: invalid TIME/],
    [['--until', '9999-12-31T23:00:00-02:00'], /--until: invalid TIME/],
    [['--since', '2026-11-21T10:00:00+2'], /--since: invalid TIME/],
    [['--since', '2026-11-21T10:00:00+02:0'], /--since: invalid TIME/],
    [['--since', '2026-11-21T10:00:00+24:00'], /--since: invalid TIME/],
    [['--since', '2026-11-21T10:00:00+02:00:00'], /--since: invalid TIME/],
    [['--since', '2026-11-21T10:00:00.Z'], /--since: invalid TIME/],
    [['--since', '2026-11-21T10:00:00.1234567891Z'], /--since: invalid TIME/],
    [['--since'], /^error: --since needs a value\n/],
    [['--format', 'csv', '--limit', '3'], /^error: unknown option --limit\n/],
    [['--pet', '-1'], /^error: --pet -1: a value that starts with "-" must be written --pet=-1\n/],
    [['--actor', ''], /--actor must not be empty/],
    [['extra'], /unexpected argument "extra"/],
  ];
  const results = await Promise.all(cases.map(([args]) => audit([...args, '--db', ctx.db])));
  for (const [i, [args, message]] of cases.entries()) {
    const r = results[i]!;
    expectExit(r, 2, `audit ${args.join(' ')}`);
    assert.match(r.stderr, message, args.join(' '));
    assert.match(r.stderr, /^error: [^\n]+\nsee --help\n$/, args.join(' '));
    assert.not.match(r.stderr, /Option '|ERR_|ambiguous/, args.join(' '));
    assert.is(r.stdout, '', args.join(' '));
  }
  for (const [what, args, env] of [
    ['--db ""', ['--db', ''], {}],
    ['INVENTORY_DB=""', [], { INVENTORY_DB: '' }],
  ] as const) {
    const r = await audit([...args], { ...env });
    expectExit(r, 2, `audit with ${what}`);
    assert.match(r.stderr, /^error: [^\n]*must not be empty\nsee --help\n$/, what);
  }
  const help = await audit(['--help']);
  expectExit(help, 0, 'audit --help');
  assert.match(help.stdout, /^Usage: scripts\/audit \[--pet PETID\]/);
  assert.match(help.stdout, /Exit status: 0 success \(also when no row matches\), 1 failure, 2 usage error/);
});

files('a path with no database exits 1 with a clear message and creates nothing', async (ctx) => {
  const viaOption = await audit(['--db', ctx.db]);
  expectExit(viaOption, 1, 'audit --db missing');
  assert.is(
    viaOption.stderr,
    `error: no database at ${ctx.db}: check --db or INVENTORY_DB, or create one with scripts/migrate --db ${ctx.db}\n`,
  );
  assert.is(viaOption.stdout, '');
  const viaEnv = await audit(['--format', 'jsonl'], { INVENTORY_DB: ctx.db });
  expectExit(viaEnv, 1, 'INVENTORY_DB=missing audit');
  assert.match(viaEnv.stderr, /no database at/);
  for (const suffix of ['', '-wal', '-shm', '-journal']) {
    assert.not.ok(existsSync(ctx.db + suffix), `inventory.db${suffix} was created`);
  }
});

files('a run never writes: the database file is byte for byte the same, the WAL stays empty', async (ctx) => {
  await seedFixture(ctx); // closed: the WAL is checkpointed into the file and removed
  const before = sha256(ctx.db);
  const mtime = statSync(ctx.db).mtimeMs;
  expectExit(await audit(['--db', ctx.db]), 0, 'audit');
  expectExit(
    await audit(['--format', 'jsonl', '--pet', '1', '--actor', 'bob', '--since', '2026-11-21', '--db', ctx.db]),
    0,
    'audit with filters',
  );
  assert.is(sha256(ctx.db), before, 'the main file changed');
  assert.is(statSync(ctx.db).mtimeMs, mtime, 'the main file was touched');
  // SQLite may leave an empty -wal and a -shm beside a WAL database it read; nothing is in them.
  if (existsSync(`${ctx.db}-wal`)) assert.is(statSync(`${ctx.db}-wal`).size, 0, 'the WAL grew');
});

// ---------------------------------------------------------------------------------------

const ROWS = 50_000;
const PETS = 100;

/**
 * Peak resident memory is read from Linux's /proc/<pid>/status (VmHWM, the high-water
 * mark, in KiB), sampled while the child runs: it only grows, so the last sample is the
 * peak up to a few milliseconds before the exit. Elsewhere the test is skipped.
 */

function peakKiB(pid: number): number | undefined {
  try {
    const m = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined; // the child has just exited: its entry is gone
  }
}

interface Streamed {
  status: number | null;
  lines: number;
  bytes: number;
  first: string;
  last: string;
  stderr: string;
  peakKiB: number | undefined;
}

/**
 * Runs scripts/audit (its wrapper execs node, so the pid is node's) and reads nothing
 * from its stdout for holdMs: a child that ignored backpressure would pile up its whole
 * output in memory meanwhile, one that waits for 'drain' holds a pipe's worth.
 */
function streamAudit(args: string[], holdMs: number): Promise<Streamed> {
  // A small young generation: short-lived garbage (pages of rows already written) is
  // collected at once instead of piling up to V8's default semi-space size, so peak RSS
  // shows what the child holds, whichever store's driver made the garbage.
  const env: NodeJS.ProcessEnv = { ...process.env, NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --max-semi-space-size=1`.trim() };
  delete env.INVENTORY_DB;
  const child = spawn(scriptPath('audit'), args, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'], timeout: 120_000 });
  child.stdout.pause();
  let peak: number | undefined;
  const sample = () => {
    const now = child.pid === undefined ? undefined : peakKiB(child.pid);
    if (now !== undefined) peak = Math.max(peak ?? 0, now);
  };
  const sampler = setInterval(sample, 10);
  let lines = 0;
  let bytes = 0;
  let head = '';
  let tail = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    bytes += chunk.length;
    const text = chunk.toString('latin1'); // byte-wise: a chunk may end inside a character
    if (head.length < 1000) head += text.slice(0, 1000);
    for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) lines++;
    tail = (tail + text).slice(-1000);
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  setTimeout(() => child.stdout.resume(), holdMs);
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    // The last sample is taken when the output ends, before the process is reaped.
    child.stdout.on('end', sample);
    child.on('close', (status) => {
      clearInterval(sampler);
      const first = head.split('\n')[0]!;
      const last = tail.trimEnd().split('\n').pop() ?? '';
      resolve({ status, lines, bytes, first, last, stderr, peakKiB: peak });
    });
  });
}

needing(test, [tools.procStatus])(`streams ${ROWS} rows as JSON lines, waiting for a slow reader in bounded memory`, async (ctx) => {
  // Seeding: one handleAll, so one transaction and one commit.
  const now = () => Date.parse('2026-11-21T10:00:00.000Z');
  const store = await ctx.target.open(ctx.db, { now });
  try {
    const commands: Command[] = [];
    for (let p = 1; p <= PETS; p++) commands.push(track(BIG + BigInt(p), 0));
    for (let i = 0; i < ROWS; i++) commands.push(set(BIG + BigInt((i % PETS) + 1), i % 1000));
    // A longer actor makes each line ~290 bytes: ~14 MiB of output, which would show if held.
    await commandsOn(store, now).handleAll(commands, { actor: `cli:${'x'.repeat(120)}`, requestId: 'bulk-load' });
  } finally {
    await store.close();
  }

  // The baseline reads the same rows through the same view but prints none of them.
  const [empty, r] = await Promise.all([
    streamAudit(['--format', 'jsonl', '--since', '2099-01-01', '--db', ctx.db], 0),
    streamAudit(['--format', 'jsonl', '--db', ctx.db], 1000),
  ]);
  assert.is(empty.status, 0, empty.stderr);
  assert.is(empty.lines, 0);
  assert.is(r.status, 0, r.stderr);
  assert.is(r.stderr, '');
  assert.is(r.lines, ROWS);
  const pet = (p: number) => String(BIG + BigInt(p));
  assert.ok(
    r.first.startsWith(
      `{"seq":${PETS + 1},"recorded_at":"2026-11-21T10:00:00.000Z","pet_id":${pet(1)},"previous_quantity":0,"quantity":0,"delta":0,`,
    ),
    r.first,
  );
  assert.ok(
    r.last.startsWith(
      `{"seq":${PETS + ROWS},"recorded_at":"2026-11-21T10:00:00.000Z","pet_id":${pet(PETS)},"previous_quantity":899,"quantity":999,"delta":100,`,
    ),
    r.last,
  );
  assert.ok(r.peakKiB !== undefined && empty.peakKiB !== undefined, 'peak memory was sampled from /proc');
  const extraMiB = (r.peakKiB - empty.peakKiB) / 1024;
  const outputMiB = r.bytes / 1024 / 1024;
  console.log(
    `  peak RSS ${(r.peakKiB / 1024).toFixed(1)} MiB for ${ROWS} rows (${outputMiB.toFixed(1)} MiB of output), ` +
      `${(empty.peakKiB / 1024).toFixed(1)} MiB for the same scan printing none: ${extraMiB.toFixed(1)} MiB more`,
  );
  // Measured: a streaming child needs about the output's size more (SQLite's sorter for
  // ORDER BY seq, capped by its cache size); one that wrote without waiting for 'drain'
  // held 4 to 5 times the output (strings and write buffers).
  assert.ok(
    extraMiB < 2 * outputMiB,
    `the child held ${extraMiB.toFixed(1)} MiB more than with no rows, for ${outputMiB.toFixed(1)} MiB of output`,
  );
});

test.run();
files.run();
