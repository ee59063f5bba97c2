// scripts/track end to end, one pet at a time and from a file, as a child process on every
// store (test/kit/cli.ts).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as assert from 'uvu/assert';
import { parseJson } from '../kit/http.ts';
import { countEvents, noDatabase, query } from '../kit/sql.ts';
import {
  type EventData,
  ISO_MS,
  UUID,
  operator,
  script,
  expectExit,
  expectFailure,
  expectUsageError,
  RAW_NODE,
  cliSuite,
  seed,
  createDb,
  track,
} from '../kit/cli.ts';

const trackOne = cliSuite('scripts/track PETID');

trackOne('tracks a pet with the defaults: one PetTracked event and its inventory row', async (ctx) => {
  await createDb(ctx);
  const r = script('track', ['42', '--db', ctx.db]);
  expectExit(r, 0, 'track 42');
  assert.match(r.stdout, /pet 42/);

  const events = await query(ctx, 'SELECT * FROM events');
  assert.is(events.length, 1);
  const e = events[0]!;
  assert.is(e.pet_id, 42n);
  assert.is(e.type, 'PetTracked');
  assert.is(e.version, 1n);
  const data = parseJson<EventData>(String(e.data));
  assert.is(data.quantity, 0);
  assert.is(data.status, 'available');
  assert.is(data.schemaVersion, 1);
  assert.is(e.actor, operator);
  assert.match(String(e.request_id), UUID);
  assert.match(String(e.recorded_at), ISO_MS);
  assert.ok(Math.abs(Date.parse(String(e.recorded_at)) - Date.now()) < 60_000, 'recorded_at is now');

  assert.equal(await query(ctx, 'SELECT * FROM inventory'), [
    { pet_id: 42n, quantity: 0n, status: 'available', version: 1n, updated_at: e.recorded_at },
  ]);
});

trackOne('--status and --quantity are kept; int64 max stays exact; tracking it again exits 1', async (ctx) => {
  await createDb(ctx);
  const max = '9223372036854775807';
  const r = script('track', [max, '--status', 'pending', '--quantity', '7', '--db', ctx.db]);
  expectExit(r, 0, 'track max --status pending --quantity 7');
  assert.ok(r.stdout.includes(max), r.stdout);

  const sqlite = ctx.target.name === 'sqlite';
  const [e] = await query(
    ctx,
    `SELECT pet_id, ${sqlite ? 'typeof(pet_id)' : 'pg_typeof(pet_id)::text'} AS t, type, version, data FROM events`,
  );
  assert.is(e!.pet_id, BigInt(max));
  assert.is(e!.t, sqlite ? 'integer' : 'bigint', 'stored as an integer, not text');
  assert.is(e!.type, 'PetTracked');
  const data = parseJson<EventData>(String(e!.data));
  assert.is(data.quantity, 7);
  assert.is(data.status, 'pending');
  const [row] = await query(ctx, 'SELECT pet_id, quantity, status, version FROM inventory');
  assert.equal(row, { pet_id: BigInt(max), quantity: 7n, status: 'pending', version: 1n });

  const again = script('track', [max, '--quantity', '1', '--db', ctx.db]);
  expectExit(again, 1, 'track of a tracked pet');
  assert.ok(again.stderr.includes(max), again.stderr);
  assert.match(again.stderr, /already/);
  assert.is(await countEvents(ctx), 1n, 'nothing appended');
  assert.equal(await query(ctx, 'SELECT pet_id, quantity, status, version FROM inventory'), [row]);
});

trackOne('an invalid PETID, --status or --quantity exits 2 and touches no database', async (ctx) => {
  const cases: [string, string[], RegExp][] = [
    ['PETID 007', ['007'], /petId/],
    ['PETID 0', ['0'], /petId/],
    ['PETID abc', ['abc'], /petId/],
    ['--status lost', ['5', '--status', 'lost'], /status/],
    ['--quantity 1.5', ['5', '--quantity', '1.5'], /quantity/],
    ['--quantity ""', ['5', '--quantity', ''], /quantity/],
  ];
  for (const [what, args, message] of cases) {
    expectUsageError(script('track', [...args, '--db', ctx.db]), message, `track ${what}`);
  }
  assert.ok(await noDatabase(ctx), 'no database was created');
});

trackOne("parseArgs' refusals are said in the operator's words, one line and see --help", async (ctx) => {
  const cases: [string[], RegExp][] = [
    [['5', '--quantity', '-3'], /^error: --quantity -3: a value that starts with "-" must be written --quantity=-3\n/],
    [['5', '--quantity'], /^error: --quantity needs a value\n/],
    [['5', '--quantity', '--status', 'sold'], /^error: --quantity needs a value\n/],
    [['5', '--bogus'], /^error: unknown option --bogus\n/],
    [['5', '-x'], /^error: unknown option -x\n/],
    [['5', '--help=yes'], /^error: --help takes no value\n/],
    [['5', '--quantity=-3'], /^error: quantity must be an integer from 0 to 2147483647, not "-3"\n/],
  ];
  for (const [args, message] of cases) {
    const r = script('track', [...args, '--db', ctx.db]);
    expectUsageError(r, message, `track ${args.join(' ')}`);
    assert.not.match(r.stderr, RAW_NODE, args.join(' '));
  }
  assert.ok(await noDatabase(ctx), 'no database was created');
});

trackOne.run();

// ---------------------------------------------------------------------------------------
const trackFile = cliSuite('scripts/track --file');

trackFile('a JSON array tracks every pet, ids above 2^53 given as strings stay exact', async (ctx) => {
  await createDb(ctx);
  const file = join(ctx.dir, 'pets.json');
  writeFileSync(
    file,
    JSON.stringify([{ petId: 1 }, { petId: '9007199254740993', status: 'sold', quantity: 3 }, { petId: 2, status: 'pending' }]),
  );
  const r = script('track', ['--file', file, '--db', ctx.db]);
  expectExit(r, 0, 'track --file pets.json');
  assert.ok(r.stdout.includes('9007199254740993'), r.stdout);

  assert.equal(await query(ctx, 'SELECT pet_id, quantity, status, version FROM inventory ORDER BY pet_id'), [
    { pet_id: 1n, quantity: 0n, status: 'available', version: 1n },
    { pet_id: 2n, quantity: 0n, status: 'pending', version: 1n },
    { pet_id: 9007199254740993n, quantity: 3n, status: 'sold', version: 1n },
  ]);
  const events = await query(ctx, 'SELECT pet_id, type, actor, request_id FROM events ORDER BY seq');
  assert.equal(
    events.map((e) => e.pet_id),
    [1n, 9007199254740993n, 2n],
  );
  assert.ok(events.every((e) => e.type === 'PetTracked' && e.actor === operator));
  assert.is(new Set(events.map((e) => e.request_id)).size, 1, 'one request id for the whole command');
});

trackFile('JSON numbers count as written: 2e1 and 5.0 are integers, a bare id above 2^53 stays exact', async (ctx) => {
  const file = join(ctx.dir, 'pets.json');
  writeFileSync(
    file,
    '[{"petId": 2e1, "quantity": 5.0}, {"petId": 9007199254740993}, {"petId": 9223372036854775807, "quantity": 2.147483647e9}]',
  );
  await createDb(ctx);
  const r = script('track', ['--file', file, '--db', ctx.db]);
  expectExit(r, 0, 'track --file with written numbers');
  assert.equal(await query(ctx, 'SELECT pet_id, quantity FROM inventory ORDER BY pet_id'), [
    { pet_id: 20n, quantity: 5n },
    { pet_id: 9007199254740993n, quantity: 0n },
    { pet_id: 9223372036854775807n, quantity: 2147483647n },
  ]);
});

trackFile('a file that cannot be read is one error line in plain words, exit 1', async (ctx) => {
  const missing = join(ctx.dir, 'pets.json');
  const r = script('track', ['--file', missing, '--db', ctx.db]);
  expectFailure(r, new RegExp(`^error: cannot read ${missing.replace(/[.]/g, '\\.')}: no such file\n$`), 'track --file missing');
  assert.not.match(r.stderr, RAW_NODE);
  const dir = script('track', ['--file', ctx.dir, '--db', ctx.db]);
  expectFailure(dir, /: it is a directory\n$/, 'track --file DIRECTORY');
  assert.not.match(dir.stderr, RAW_NODE);
  const latin1 = join(ctx.dir, 'latin1.json');
  writeFileSync(latin1, Buffer.from('[{"petId": 1, "status": "sold\xe9"}]', 'latin1'));
  const bad = script('track', ['--file', latin1, '--db', ctx.db]);
  expectExit(bad, 1, 'track --file with invalid UTF-8');
  assert.match(bad.stderr, /refused whole, nothing was tracked:\n {2}the file is not valid UTF-8 text\n$/);
  assert.ok(await noDatabase(ctx), 'nothing was opened');
});

trackFile('a CSV with the header petId,status,quantity; empty cells take the defaults', async (ctx) => {
  await createDb(ctx);
  const file = join(ctx.dir, 'pets.csv');
  writeFileSync(file, 'petId,status,quantity\r\n10,,\r\n11,sold,\r\n12,,9\r\n9223372036854775807,pending,2147483647\r\n');
  const r = script('track', ['--file', file, '--db', ctx.db]);
  expectExit(r, 0, 'track --file pets.csv');
  assert.equal(await query(ctx, 'SELECT pet_id, quantity, status FROM inventory ORDER BY pet_id'), [
    { pet_id: 10n, quantity: 0n, status: 'available' },
    { pet_id: 11n, quantity: 0n, status: 'sold' },
    { pet_id: 12n, quantity: 9n, status: 'available' },
    { pet_id: 9223372036854775807n, quantity: 2147483647n, status: 'pending' },
  ]);
  assert.is(await countEvents(ctx), 4n);
});

trackFile('a file with one bad row exits 1, names the problem and tracks nothing', async (ctx) => {
  await seed(ctx, [track(500n)]);
  const before = await countEvents(ctx);
  const cases: [string, string, RegExp][] = [
    ['bad-status.json', JSON.stringify([{ petId: 1 }, { petId: 2, status: 'lost' }, { petId: 3 }]), /item 1: status/],
    ['bad-quantity.json', JSON.stringify([{ petId: 1 }, { petId: 2 }, { petId: 3, quantity: -1 }]), /item 2: quantity/],
    ['duplicate.csv', 'petId,status,quantity\n1,,\n2,,\n1,sold,4\n', /line 4: pet 1 appears again/],
    ['duplicate-member.json', '[{"petId": 20, "petId": 21}]', /line 1, column 16: member "petId" appears more than once/],
    ['duplicate-escaped.json', '[{"petId": 20, "quantity": 1, "\\u0071uantity": 2}]', /member "quantity" appears more than once/],
    [
      'rounded-fraction.json',
      '[{"petId": 1, "quantity": 2147483647.0000001}]',
      /item 0: quantity must be an integer from 0 to 2147483647, not 2147483647.0000001/,
    ],
    ['tiny-fraction.json', '[{"petId": 1, "quantity": 1e-400}]', /item 0: quantity must be an integer/],
    [
      'id-fraction.json',
      '[{"petId": 9007199254740993.5}]',
      /item 0: petId must be an integer from 1 to 9223372036854775807, not 9007199254740993.5/,
    ],
    ['id-too-big.json', '[{"petId": 9223372036854775808}]', /item 0: petId must be an integer from 1 to 9223372036854775807/],
    [
      'malformed.json',
      '[\n  {"petId": 1},\n  {"petId": 2,}\n]',
      /not valid JSON: expected a member name in double quotes, found "}" at line 3, column 15/,
    ],
    ['wrong-header.csv', 'id,status,quantity\n1,,\n', /CSV header must be petId,status,quantity/],
  ];
  for (const [name, text, message] of cases) {
    const file = join(ctx.dir, name);
    writeFileSync(file, text);
    const r = script('track', ['--file', file, '--db', ctx.db]);
    expectExit(r, 1, `track --file ${name}`);
    assert.match(r.stderr, message, name);
    // One error line naming the file, then each problem on its own indented line.
    const [first, ...problems] = r.stderr.trimEnd().split('\n');
    assert.is(first, `error: ${file} was refused whole, nothing was tracked:`, name);
    assert.ok(problems.length > 0 && problems.every((p) => /^ {2}\S/.test(p)), `${name}: indented problems\n${r.stderr}`);
    assert.not.match(r.stderr, RAW_NODE, name);
    assert.is(r.stdout, '', name);
    assert.is(await countEvents(ctx), before, `${name}: nothing appended`);
  }
  assert.equal(await query(ctx, 'SELECT pet_id FROM inventory'), [{ pet_id: 500n }]);
});

trackFile('a file holding a pet that is tracked already exits 1 and tracks nothing', async (ctx) => {
  await seed(ctx, [track(7n, 4)]);
  const file = join(ctx.dir, 'pets.json');
  writeFileSync(file, JSON.stringify([{ petId: 6 }, { petId: 7, quantity: 9 }, { petId: 8 }]));
  const r = script('track', ['--file', file, '--db', ctx.db]);
  expectExit(r, 1, 'track --file with a tracked pet');
  assert.match(r.stderr, /pet 7 is tracked already/);
  assert.match(r.stderr, /nothing was tracked/);
  assert.is(r.stdout, '');
  assert.is(await countEvents(ctx), 1n, 'pet 6 was not tracked either');
  assert.equal(await query(ctx, 'SELECT pet_id, quantity, version FROM inventory'), [{ pet_id: 7n, quantity: 4n, version: 1n }]);
});

trackFile.run();
