// End-to-end tests of the operator commands: the real wrapper scripts in scripts/, run
// as child processes against a fresh database per test on every store (a SQLite file, a
// PostgreSQL database); the outcome is judged by exit status, standard output and error,
// and the database contents.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import * as assert from 'uvu/assert';
import type { Command } from '../src/domain/decide.ts';
import { openDatabase } from '../src/store/sqlite/database.ts';
import { runCommands } from './kit/fixtures.ts';
import { parseJson } from './kit/http.ts';
import { root, tempDir, type TempDir } from './kit/paths.ts';
import { runScriptSync, type ScriptResult as Result } from './kit/scripts.ts';
import { sqliteTarget } from './kit/sqlite-target.ts';
import { storeTargets, type StoreTarget } from './kit/stores.ts';
import { countEvents, execute, noDatabase, query } from './kit/sql.ts';
import { targetSuites } from './kit/suites.ts';

/** An event's data column, the members tests read. */
interface EventData {
  quantity?: number;
  status?: string;
  schemaVersion?: number;
}

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const KEY_LINE = /^pinv_[A-Za-z0-9]{32}\n$/;
const operator = `cli:${userInfo().username}`;

/** Runs scripts/<name> with args; INVENTORY_DB is unset unless env sets it. */
const script = (name: string, args: string[], env: Record<string, string> = {}): Result => runScriptSync(name, args, { env });

function expectExit(r: Result, status: number, what: string): void {
  assert.is(r.status, status, `${what}: exit ${r.status}, expected ${status}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
}

/** A failure: exit 1 and one line `error: …` on standard error (more lines only when said). */
function expectFailure(r: Result, message: RegExp, what: string): void {
  expectExit(r, 1, what);
  assert.match(r.stderr, /^error: [^\n]+\n$/, `${what}: one error line\n${r.stderr}`);
  assert.match(r.stderr, message, what);
}

/** A usage error: exit 2, one line `error: …`, then `see --help`; never the whole usage text. */
function expectUsageError(r: Result, message: RegExp, what: string): void {
  expectExit(r, 2, what);
  assert.match(r.stderr, /^error: [^\n]+\nsee --help\n$/, `${what}: error line and see --help\n${r.stderr}`);
  assert.match(r.stderr, message, what);
  assert.is(r.stdout, '', what);
}

/** What Node.js or parseArgs would say, which an operator must never read. */
const RAW_NODE = /ENOENT|EISDIR|EEXIST|ERR_|Option '|argument is ambiguous|no such file or directory|at .*\.ts:\d+/;

interface Ctx {
  target: StoreTarget;
  scratch: TempDir;
  dir: string;
  /** The database: a file path (SQLite, not created yet) or a URL (an empty PostgreSQL database). */
  db: string;
  dropDb: () => Promise<void>;
}

/** Suites whose tests each get a fresh temporary directory and database, on every target. */
function cliSuite(name: string, targets: StoreTarget[] = storeTargets()) {
  return targetSuites<Ctx>(
    name,
    {
      async beforeEach(ctx) {
        ctx.scratch = tempDir('inventory-cli-');
        ctx.dir = ctx.scratch.dir;
        if (ctx.target.name === 'sqlite') {
          ctx.db = ctx.scratch.path('inventory.db');
          ctx.dropDb = async () => {};
        } else {
          const fresh = await ctx.target.fresh();
          ctx.db = fresh.db;
          ctx.dropDb = fresh.cleanup;
        }
      },
      async afterEach(ctx) {
        ctx.scratch.cleanup();
        await ctx.dropDb();
      },
    },
    targets,
  );
}

/** Seeds a database in-process (saves a process start); the commands under test run as processes. */
async function seed(ctx: Ctx, commands: Command[]): Promise<void> {
  const store = await ctx.target.open(ctx.db);
  try {
    await runCommands(store, commands);
  } finally {
    await store.close();
  }
}

/** A new, empty database of the current schema (operator commands create none). */
async function createDb(ctx: Ctx): Promise<void> {
  if (ctx.target.name === 'sqlite') {
    openDatabase(ctx.db).close();
    return;
  }
  await (await ctx.target.open(ctx.db)).close();
}

const track = (petId: bigint, quantity = 0, status: 'available' | 'pending' | 'sold' = 'available'): Command => ({
  type: 'TrackPet',
  petId,
  quantity,
  status,
});

// ---------------------------------------------------------------------------------------
const keys = cliSuite('scripts/keys');

keys('create prints the key alone, the table holds only its hash, list shows no secret', async (ctx) => {
  await createDb(ctx);
  // INVENTORY_DB names the database here; --db below.
  const created = script('keys', ['create', 'alice'], { INVENTORY_DB: ctx.db });
  expectExit(created, 0, 'keys create');
  assert.match(created.stdout, KEY_LINE);
  const key = created.stdout.trim();
  assert.not.match(created.stderr, key, 'the key is on stdout only');

  const rows = await query(ctx, 'SELECT * FROM api_keys');
  assert.is(rows.length, 1);
  const row = rows[0]!;
  assert.is(row.name, 'alice');
  assert.is(row.hash, createHash('sha256').update(key).digest('hex'));
  assert.is(row.created_by, operator);
  assert.match(String(row.created_at), ISO_MS);
  assert.is(row.revoked_at, null);
  for (const [column, value] of Object.entries(row)) {
    assert.not.ok(String(value).includes(key), `column ${column} holds the key`);
  }

  // --db wins over INVENTORY_DB: the other file is never created.
  const other = join(ctx.dir, 'other.db');
  const listed = script('keys', ['list', '--db', ctx.db], { INVENTORY_DB: other });
  expectExit(listed, 0, 'keys list');
  assert.not.ok(existsSync(other), '--db is used, not INVENTORY_DB');
  const lines = listed.stdout.trimEnd().split('\n');
  assert.is(lines.length, 2, listed.stdout);
  assert.match(lines[0]!, /NAME\s+CREATED\s+CREATED BY\s+REVOKED/);
  assert.match(lines[1]!, new RegExp(`^alice\\s+${String(row.created_at).replace(/\./g, '\\.')}\\s+${operator}\\s+-\\s+-$`));
  const output = listed.stdout + listed.stderr;
  assert.not.ok(output.includes(key), 'list shows the key');
  assert.not.ok(output.includes(String(row.hash)), 'list shows the hash');
  assert.not.match(output, /pinv_/);
});

keys('revoke sets revoked_at; an unknown name and a taken name exit 1', async (ctx) => {
  await createDb(ctx);
  const created = script('keys', ['create', 'bob', '--db', ctx.db]);
  expectExit(created, 0, 'keys create');
  const key = created.stdout.trim();

  const revoked = script('keys', ['revoke', 'bob', '--db', ctx.db]);
  expectExit(revoked, 0, 'keys revoke');
  const row = (await query(ctx, 'SELECT * FROM api_keys WHERE name = ?', 'bob'))[0]!;
  assert.match(String(row.revoked_at), ISO_MS);
  assert.is(row.revoked_by, operator);

  const listed = script('keys', ['list', '--db', ctx.db]);
  expectExit(listed, 0, 'keys list');
  assert.match(listed.stdout, new RegExp(`^bob\\s.*\\s${String(row.revoked_at).replace(/\./g, '\\.')}\\s+${operator}$`, 'm'));
  assert.not.ok(listed.stdout.includes(key));

  const unknown = script('keys', ['revoke', 'nobody', '--db', ctx.db]);
  expectFailure(unknown, /^error: no key named "nobody" in [^\n]+\n$/, 'keys revoke of an unknown name');
  assert.is(unknown.stdout, '');

  // A revoked key's name stays taken.
  const taken = script('keys', ['create', 'bob', '--db', ctx.db]);
  expectFailure(taken, /^error: a key named "bob" exists already/, 'keys create of a taken name');
  assert.is(taken.stdout, '', 'no key is printed');
  const all = await query(ctx, 'SELECT name, hash FROM api_keys');
  assert.is(all.length, 1);
  assert.is(all[0]!.hash, row.hash, 'the first key is untouched');
});

keys('usage errors exit 2 with one error line and see --help; --help exits 0', async (ctx) => {
  expectUsageError(script('keys', ['--db', ctx.db]), /name an action: create, list or revoke/, 'keys without an action');
  expectUsageError(script('keys', ['create', 'a b', '--db', ctx.db]), /invalid NAME "a b"/, 'keys create "a b"');
  expectUsageError(script('keys', ['frob', '--db', ctx.db]), /unknown action frob: the actions are create, list and revoke/, 'keys frob');
  // The name rule the error gives is the one --help and the operators' guide give.
  const rule = 'starting with a letter or digit';
  assert.ok(script('keys', ['create', '.x', '--db', ctx.db]).stderr.includes(rule), 'the error says the rule');
  assert.ok(script('keys', ['--help']).stdout.replace(/\s+/g, ' ').includes(rule), '--help says it');
  assert.ok(readFileSync(join(root, 'docs/operators.md'), 'utf8').replace(/\s+/g, ' ').includes(rule), "the operators' guide says it");
  assert.ok(await noDatabase(ctx), 'a usage error opens no database');
  // No key is printed for a database that does not persist.
  expectUsageError(script('keys', ['create', 'carol', '--db', '']), /--db must not be empty/, 'keys create --db ""');
  expectUsageError(script('keys', ['list'], { INVENTORY_DB: '' }), /INVENTORY_DB must not be empty/, 'INVENTORY_DB=""');

  const help = script('keys', ['--help']);
  expectExit(help, 0, 'keys --help');
  assert.match(help.stdout, /^Usage: scripts\/keys create NAME/);
  assert.match(help.stdout, /revoke NAME/);
  assert.match(help.stdout, /Exit status: 0 success, 1 failure, 2 usage error/);
});

keys.run();

// ---------------------------------------------------------------------------------------
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

// ---------------------------------------------------------------------------------------
const setStatus = cliSuite('scripts/set-status');

setStatus('changes the status alone: a StatusSet event, the quantity untouched', async (ctx) => {
  await seed(ctx, [track(5n, 4, 'available')]);
  const r = script('set-status', ['5', 'sold', '--db', ctx.db]);
  expectExit(r, 0, 'set-status 5 sold');
  assert.match(r.stdout, /pet 5: sold, quantity 4/);

  const events = await query(ctx, 'SELECT * FROM events ORDER BY seq');
  assert.is(events.length, 2);
  const e = events[1]!;
  assert.is(e.type, 'StatusSet');
  assert.is(e.pet_id, 5n);
  assert.is(e.version, 2n);
  assert.is(e.actor, operator);
  assert.match(String(e.request_id), UUID);
  assert.match(String(e.recorded_at), ISO_MS);
  const data = parseJson<EventData>(String(e.data));
  assert.is(data.status, 'sold');
  assert.is(data.schemaVersion, 1);
  assert.not.ok('quantity' in data, 'StatusSet carries no quantity');
  assert.equal(await query(ctx, 'SELECT pet_id, quantity, status, version, updated_at FROM inventory'), [
    { pet_id: 5n, quantity: 4n, status: 'sold', version: 2n, updated_at: e.recorded_at },
  ]);
});

setStatus('an untracked pet exits 1; a bad status exits 2; nothing is appended', async (ctx) => {
  await seed(ctx, [track(5n, 4)]);
  const untracked = script('set-status', ['99', 'sold', '--db', ctx.db]);
  expectFailure(untracked, /pet 99 is not tracked/, 'set-status of an untracked pet');
  assert.is(untracked.stdout, '');

  expectUsageError(script('set-status', ['5', 'lost', '--db', ctx.db]), /STATUS must be available, pending or sold/, 'set-status 5 lost');

  assert.is(await countEvents(ctx), 1n);
  assert.equal(await query(ctx, 'SELECT quantity, status, version FROM inventory'), [{ quantity: 4n, status: 'available', version: 1n }]);
});

setStatus.run();

// ---------------------------------------------------------------------------------------
const rebuild = cliSuite('scripts/rebuild-projection');

const INVENTORY = 'SELECT pet_id, quantity, status, version, updated_at FROM inventory ORDER BY pet_id';

rebuild('--check finds drift and changes nothing; a rebuild repairs it to the replay', async (ctx) => {
  await seed(ctx, [
    track(1n, 5),
    { type: 'SetQuantity', petId: 1n, quantity: 8 },
    track(2n, 1, 'pending'),
    { type: 'SetStatus', petId: 2n, status: 'sold' },
    track(3n, 2),
    track(9007199254740993n, 6),
  ]);
  const healthy = await query(ctx, INVENTORY);

  const clean = script('rebuild-projection', ['--check', '--db', ctx.db]);
  expectExit(clean, 0, 'rebuild-projection --check on a healthy database');
  assert.match(clean.stdout, /^checked in [\d.]+ s: 6 events replayed, 4 entries compared, nothing written; 0 differ\n$/);

  // Corrupt the projection: a changed quantity, a missing row, a row without events.
  await execute(
    ctx,
    `UPDATE inventory SET quantity = 999 WHERE pet_id = 1;
     DELETE FROM inventory WHERE pet_id = 9007199254740993;
     INSERT INTO inventory VALUES (77, 1, 'available', 1, '2026-01-01T00:00:00.000Z');`,
  );
  const corrupt = await query(ctx, INVENTORY);

  const drift = script('rebuild-projection', ['--check', '--db', ctx.db]);
  expectExit(drift, 1, 'rebuild-projection --check with drift');
  assert.match(drift.stdout, /3 differ:/);
  assert.match(drift.stdout, /pet 1: quantity 999, available, version 2 -> quantity 8, available, version 2/);
  assert.match(drift.stdout, /pet 77: quantity 1, available, version 1 -> no entry/);
  assert.match(drift.stdout, /pet 9007199254740993: no entry -> quantity 6, available, version 1/);
  assert.not.match(drift.stdout, /pet [23]:/, 'only the differing pets are listed');
  assert.equal(await query(ctx, INVENTORY), corrupt, '--check changed nothing');

  const repaired = script('rebuild-projection', ['--db', ctx.db]);
  expectExit(repaired, 0, 'rebuild-projection');
  assert.match(repaired.stdout, /^rebuilt in [\d.]+ s: 6 events replayed, 4 entries written; 3 differed:/);
  assert.match(repaired.stdout, /pet 1: /);
  assert.match(repaired.stdout, /pet 77: /);
  assert.match(repaired.stdout, /pet 9007199254740993: /);
  assert.equal(await query(ctx, INVENTORY), healthy, 'the projection equals the replay');
  assert.is(await countEvents(ctx), 6n, 'the log is untouched');

  const after = script('rebuild-projection', ['--check', '--db', ctx.db]);
  expectExit(after, 0, 'rebuild-projection --check after the rebuild');
  assert.match(after.stdout, /0 differ/);
});

rebuild('the events table refuses UPDATE and DELETE from a plain connection', async (ctx) => {
  await seed(ctx, [track(1n, 5)]);
  const refusal = (sql: string) =>
    execute(ctx, sql).then(
      () => 'ran',
      (error: Error) => error.message,
    );
  assert.match(await refusal('UPDATE events SET data = \'{"quantity":1,"status":"sold","schemaVersion":1}\''), /append-only/);
  assert.match(await refusal('DELETE FROM events'), /append-only/);
  assert.is(await countEvents(ctx), 1n);
  const [row] = await query<{ data: string }>(ctx, 'SELECT data FROM events');
  assert.is(parseJson<EventData>(row!.data).quantity, 5);
});

rebuild.run();

// ---------------------------------------------------------------------------------------
const files = cliSuite('commands and database files (SQLite only: paths)', [sqliteTarget()]);

files('a path with no database is an error (exit 1) and creates nothing', async (ctx) => {
  for (const args of [['rebuild-projection', '--check'], ['rebuild-projection'], ['keys', 'list'], ['set-status', '1', 'sold']]) {
    const [name, ...rest] = args as [string, ...string[]];
    const r = script(name, [...rest, '--db', ctx.db]);
    expectFailure(r, /^error: no database at /, args.join(' '));
    assert.ok(await noDatabase(ctx), `${args.join(' ')} created a database`);
  }
});

files('a database path under a plain file is one error line in plain words', (ctx) => {
  writeFileSync(join(ctx.dir, 'plain'), '');
  const r = script('migrate', ['--db', join(ctx.dir, 'plain', 'x.db')]);
  expectFailure(
    r,
    /^error: cannot open .*x\.db: .*plain is a file, not a directory: check --db or INVENTORY_DB\n$/,
    'migrate under a file',
  );
  assert.not.match(r.stderr, RAW_NODE);
  assert.is(r.stdout, '', 'nothing is reported as created');
});

files.run();
