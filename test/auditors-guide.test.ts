// docs/auditors.md, run as written. Its example database is built again through the
// service's own code (openStore with an injected clock, the key store, the command
// handler), with the times, actors and request ids its outputs show, so that every output
// of the page, the hash chain and therefore the digests, comes out byte for byte. Then the
// page's fenced blocks are walked in order, and each one is either run and its output
// compared with the block the page shows after it (trailing spaces aside), or listed in
// NOT_RUN with the reason. A block that is neither fails the test, and so does a NOT_RUN
// entry that matches no block: a new example cannot go untested.
//
// What runs, and how:
// - a ```sql block: in the sqlite3 shell, invoked the way the page says its queries ran;
// - a ```sh block of sqlite3 commands: through bash, as written, with data/inventory.db
//   replaced by the example's path; its output is the block after it, or nothing when the
//   text before it says that it printed nothing;
// - a block of `$ command` lines: each line through bash from the repository's root
//   (INVENTORY_DB set to the example), standard error and output together as a terminal
//   shows them; `(exit N)` lines where the page shows them;
// - the ```python block: written to verify_chain.py in a scratch directory, where the
//   `$ python3 verify_chain.py` line runs it;
// - the PostgreSQL forms of (c) and (f): on a copy of the example in PostgreSQL (made by
//   scripts/copy-store), their rows must equal their SQLite forms' rows value for value,
//   and so must those of the queries the page says run unchanged there.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { createBootstrapKey } from '../src/bootstrap.ts';
import type { Command } from '../src/domain/decide.ts';
import { VersionMismatch } from '../src/domain/errors.ts';
import type { PetStatus } from '../src/domain/events.ts';
import { judgeWrite, readConditions } from '../src/http/preconditions.ts';
import { openStore } from '../src/store/open.ts';
import { commandsOn, createKey } from './kit/fixtures.ts';
import { root, tempDir } from './kit/paths.ts';
import { freshPostgresDatabase } from './kit/postgres-server.ts';
import { runScript } from './kit/scripts.ts';
import { startApp } from './kit/app.ts';
import { recomputeChain, withFile } from './kit/tamper.ts';
import { needing, tools } from './kit/tools.ts';

const PAGE = 'docs/auditors.md';
const KEEPING = "Keeping the head's digests";
const PAGE_DB = 'data/inventory.db';
const BIG = 9007199254740993n;
const MAX = 9223372036854775807n;

// ---------------------------------------------------------------------------------------
// The example database, as the guide describes it ("The example database": four steps,
// about a second apart). The clock is set to `at` before each row. Every time and request
// id here is one that the page's outputs show, except the few marked INVENTED, which no
// output shows (the test checks both ways). The invented request ids are hashed into the
// chain all the same: they are the ones the page's digests were computed with.

type Act =
  | { kind: 'bootstrap key' } // the service's first start (src/bootstrap.ts)
  | { kind: 'key'; name: string } // scripts/keys create NAME
  | { kind: 'commands'; commands: Command[] } // one request, or one operator command
  | { kind: 'refused'; command: Command } // a request refused by its command: writes nothing
  | { kind: 'GET /v1/inventory'; matches: string }; // the projection then, equal to (f) at `matches`

interface Step {
  at: string;
  /** The seqs its events get, in order. */
  seqs: number[];
  actor: string;
  requestId: string;
  act: Act;
}

const track = (petId: bigint, quantity: number, status: PetStatus = 'available'): Command => ({
  type: 'TrackPet',
  petId,
  quantity,
  status,
});
/** A PATCH, with If-Match judged the way the route judges it. */
const patch = (petId: bigint, quantity: number, ifMatch?: string): Command => {
  if (ifMatch === undefined) return { type: 'SetQuantity', petId, quantity };
  const conditions = readConditions({ 'if-match': ifMatch });
  return { type: 'SetQuantity', petId, quantity, precondition: (version) => judgeWrite(conditions, `"${version}"`) === 'proceed' };
};
const setStatus = (petId: bigint, status: PetStatus): Command => ({ type: 'SetStatus', petId, status });
const run = (...commands: Command[]): Act => ({ kind: 'commands', commands });

const INVENTED = {
  bootstrapKeyAt: '2026-11-21T18:57:36.500Z',
  seq2At: '2026-11-21T18:57:37.900Z',
  seq2RequestId: '5f0c1d2e-0000-4000-8000-000000000002',
  fileRequestId: '5f0c1d2e-0000-4000-8000-000000000003',
  seq12RequestId: '5f0c1d2e-0000-4000-8000-000000000012',
  refusedAt: '2026-11-21T18:57:43.100Z',
  refusedRequestId: '5f0c1d2e-0000-4000-8000-000000000412',
};

// prettier-ignore
const EXAMPLE: Step[] = [
  // the clock                   its seqs       actor          request id                                   what happened
  // 1. The service starts on an empty database; the operator adds a key and tracks pets.
  { at: INVENTED.bootstrapKeyAt,    seqs: [],     actor: 'service:first-start', requestId: '',                                     act: { kind: 'bootstrap key' } },
  { at: '2026-11-21T18:57:36.992Z', seqs: [],     actor: 'cli:root',    requestId: '',                                     act: { kind: 'key', name: 'store-front' } },
  { at: '2026-11-21T18:57:37.408Z', seqs: [1],    actor: 'cli:root',    requestId: 'bb61db45-26f0-4842-b75a-850e0a1a993c', act: run(track(1n, 5)) },
  { at: INVENTED.seq2At,            seqs: [2],    actor: 'cli:root',    requestId: INVENTED.seq2RequestId,                 act: run(track(BIG, 0)) },
  { at: '2026-11-21T18:57:38.389Z', seqs: [3, 4], actor: 'cli:root',    requestId: INVENTED.fileRequestId,                 act: run(track(10n, 3), track(MAX, 1, 'pending')) },
  // 2. bootstrap counts pet 1 twice; the operator sets it to pending.
  { at: '2026-11-21T18:57:39.657Z', seqs: [5],    actor: 'bootstrap',   requestId: 'recount-42',                           act: run(patch(1n, 7)) },
  { at: '2026-11-21T18:57:39.670Z', seqs: [6],    actor: 'bootstrap',   requestId: 'fa63d48c-375a-481a-acfa-10e12e276869', act: run(patch(1n, 8, '"2"')) },
  { at: '2026-11-21T18:57:40.028Z', seqs: [7],    actor: 'cli:root',    requestId: '0ade1acb-757d-418c-a55d-b76308e26c6e', act: run(setStatus(1n, 'pending')) },
  { at: '2026-11-21T18:57:41.254Z', seqs: [],     actor: 'bootstrap',   requestId: '',                                     act: { kind: 'GET /v1/inventory', matches: '2026-11-21T18:57:41Z' } },
  // 3. store-front: pet 1 to 6, then 6 again (a confirmed count); pet BIG to 12, pet 10 to 0.
  { at: '2026-11-21T18:57:41.272Z', seqs: [8],    actor: 'store-front', requestId: '8fe6f289-f2af-438f-93d3-251866484765', act: run(patch(1n, 6)) },
  { at: '2026-11-21T18:57:41.282Z', seqs: [9],    actor: 'store-front', requestId: 'f74df90f-4db7-46a1-9ae4-2c58b6336cb1', act: run(patch(1n, 6)) },
  { at: '2026-11-21T18:57:41.290Z', seqs: [10],   actor: 'store-front', requestId: '849e0aea-24e1-4d45-b134-0180cca7b5d4', act: run(patch(BIG, 12)) },
  { at: '2026-11-21T18:57:41.298Z', seqs: [11],   actor: 'store-front', requestId: '1740042a-905a-4062-b800-945951731875', act: run(patch(10n, 0)) },
  { at: '2026-11-21T18:57:42.502Z', seqs: [],     actor: 'bootstrap',   requestId: '',                                     act: { kind: 'GET /v1/inventory', matches: '2026-11-21T18:57:42.5Z' } },
  // 4. The operator sells pet 10; a delivery of pet BIG; a stale If-Match is refused (the
  //    quantity of -1 is refused by the route's validation, before any command: nothing to replay).
  { at: '2026-11-21T18:57:42.871Z', seqs: [12],   actor: 'cli:root',    requestId: INVENTED.seq12RequestId,                act: run(setStatus(10n, 'sold')) },
  { at: '2026-11-21T18:57:42.922Z', seqs: [13],   actor: 'bootstrap',   requestId: 'delivery-2026-11-21',                  act: run(patch(BIG, 40)) },
  { at: INVENTED.refusedAt,         seqs: [],     actor: 'bootstrap',   requestId: INVENTED.refusedRequestId,              act: { kind: 'refused', command: patch(1n, 9, '"3"') } },
];

interface InventorySeen {
  matches: string;
  rows: string[][];
}

/** Builds the example at db; returns what GET /v1/inventory would have answered at each read. */
async function buildExample(db: string): Promise<InventorySeen[]> {
  let clock = 0;
  const store = await openStore(db, { now: () => clock });
  const seen: InventorySeen[] = [];
  try {
    const commands = commandsOn(store, () => clock);
    for (const step of EXAMPLE) {
      clock = Date.parse(step.at);
      const meta = { actor: step.actor, requestId: step.requestId };
      const { act } = step;
      const before = await store.lastSeq();
      switch (act.kind) {
        case 'bootstrap key':
          assert.ok(await createBootstrapKey(store.keys), 'the first start creates the bootstrap key');
          break;
        case 'key':
          await createKey(store, act.name, step.actor);
          break;
        case 'commands':
          // scripts/track tracks a file (or one pet) all or nothing; PATCH and scripts/set-status go one at a time.
          if (act.commands.every((c) => c.type === 'TrackPet')) await commands.handleAll(act.commands, meta);
          else for (const c of act.commands) await commands.handle(c, meta);
          break;
        case 'refused':
          try {
            await commands.handle(act.command, meta);
            assert.unreachable(`${step.at}: the request is refused`);
          } catch (err) {
            if (!(err instanceof VersionMismatch)) throw err;
          }
          break;
        case 'GET /v1/inventory':
          seen.push({
            matches: act.matches,
            rows: (await store.entries()).map((e) => [String(e.petId), String(e.quantity), e.status]),
          });
          break;
      }
      const after = await store.lastSeq();
      assert.equal(
        Array.from({ length: after - before }, (_, i) => before + 1 + i),
        step.seqs,
        `${step.at}: the seqs of its events`,
      );
    }
  } finally {
    await store.close();
  }
  return seen;
}

// ---------------------------------------------------------------------------------------
// The page's blocks.

interface Block {
  lang: string;
  text: string;
  line: number;
  /** The nearest heading above it, without its #s. */
  heading: string;
  /** The prose between the previous block and this one. */
  before: string;
}

function pageText(): string {
  return readFileSync(join(root, PAGE), 'utf8');
}

function blocks(page: string): Block[] {
  const found: Block[] = [];
  let end = 0;
  for (const m of page.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)) {
    const above = page.slice(0, m.index);
    const headings = [...above.matchAll(/^#{2,3} (.+)$/gm)];
    found.push({
      lang: m[1]!,
      text: m[2]!,
      line: above.split('\n').length,
      heading: headings.at(-1)?.[1] ?? '',
      before: page.slice(end, m.index),
    });
    end = m.index + m[0].length;
  }
  return found;
}

// Blocks that are not examples to run, each with the reason. Each must match exactly one block.
const NOT_RUN: [RegExp, string][] = [
  [/^PGOPTIONS=/, "it connects to the reader's own PostgreSQL server (HOST) as a role this test does not have"],
  [/^scripts\/audit \[--pet/, "the command's usage text"],
  [/^hash = SHA-256\(/, 'the encoding, written out, not a program'],
];

/** The $ lines of the verify-log story say, in a comment, what happened to the database before them. */
const STORY: Record<string, (db: string) => void> = {
  "after someone dropped the trigger and changed seq 1's quantity from 5 to 50": (db) =>
    withFile(db, (raw) => {
      raw.exec('DROP TRIGGER events_no_update');
      const changed = raw.prepare(`UPDATE events SET data = replace(data, '"quantity":5,', '"quantity":50,') WHERE seq = 1`).run();
      assert.is(changed.changes, 1);
    }),
  '... and then recomputed the whole chain': (db) => withFile(db, recomputeChain),
};

const tidy = (text: string) =>
  text
    .split('\n')
    .map((l) => l.trimEnd())
    .join('\n')
    .trim();

/** One shell command line as the page writes it, with the example's path for data/inventory.db. */
function shell(command: string, db: string, options: { cwd?: string; input?: string } = {}): { output: string; status: number } {
  const r = spawnSync('bash', ['-c', `exec 2>&1\n${command.replaceAll(PAGE_DB, db)}`], {
    cwd: options.cwd ?? root,
    env: { ...process.env, INVENTORY_DB: db },
    input: options.input ?? '',
    encoding: 'utf8',
    timeout: 60_000,
    killSignal: 'SIGKILL',
  });
  assert.ok(r.status !== null, `${command}: did not finish (${r.error?.message ?? r.signal})`);
  return { output: r.stdout, status: r.status };
}

/** Runs the $ lines of a block and returns the transcript as the page would show it. */
function transcript(text: string, db: string, scratch: string): string {
  const showsExit = text.includes('\n(exit ');
  const out: string[] = [];
  for (const line of text.split('\n').filter((l) => l.startsWith('$ '))) {
    const comment = /\s#\s*(.*)$/.exec(line)?.[1];
    if (comment !== undefined) {
      const act = STORY[comment];
      assert.ok(act, `${line}: the test does not know what happened before this command (STORY)`);
      act(db);
    }
    const command = line.slice(2);
    if (command.includes('verify_chain.py')) assert.ok(existsSync(join(scratch, 'verify_chain.py')), 'the Python block comes first');
    const r = shell(command, db, { cwd: command.includes('verify_chain.py') ? scratch : root });
    out.push(line);
    if (r.output.trimEnd() !== '') out.push(r.output.trimEnd());
    if (showsExit || r.status !== 0) out.push(`(exit ${r.status})`);
  }
  return out.join('\n');
}

/** A query's columns and rows, every value as text (integers exact) or null. */
interface Rows {
  columns: string[];
  rows: (string | null)[][];
}

function asText(v: unknown): string | null {
  if (v === null || typeof v === 'string') return v;
  if (typeof v === 'bigint' || typeof v === 'number') return String(v);
  throw new Error(`a value of type ${typeof v} in a query's result`);
}

function sqliteRows(db: string, sql: string): Rows {
  const conn = new Database(db, { readonly: true, fileMustExist: true });
  try {
    const statement = conn.prepare(sql).safeIntegers(true).raw(true);
    return {
      columns: statement.columns().map((c) => c.name),
      rows: (statement.all() as unknown[][]).map((r) => r.map(asText)),
    };
  } finally {
    conn.close();
  }
}

async function postgresRows(client: pg.Client, sql: string): Promise<Rows> {
  const result = await client.query<unknown[]>({ text: sql, rowMode: 'array' });
  return { columns: result.fields.map((f) => f.name), rows: result.rows.map((r) => r.map(asText)) };
}

// ---------------------------------------------------------------------------------------

const test = suite("the auditors' guide, run as written");

test('the example database is the one the page describes: every time and request id in the timeline is on the page, the invented ones are not', () => {
  const page = pageText();
  const invented: string[] = Object.values(INVENTED);
  for (const step of EXAMPLE) {
    for (const value of [step.at, step.requestId]) {
      if (value === '' || step.act.kind === 'GET /v1/inventory') continue;
      if (invented.includes(value)) assert.not.ok(page.includes(value), `${value} is invented, so no output may show it`);
      else assert.ok(page.includes(value), `${value} (${step.at}) is on the page`);
    }
  }
  for (const step of EXAMPLE.filter((s) => s.act.kind === 'GET /v1/inventory')) {
    assert.ok(page.includes(`at ${step.at.slice(11)}`), `the page says GET /v1/inventory was called at ${step.at}`);
  }
});

needing(test, [tools.sqlite3, tools.python3])(
  'every block of docs/auditors.md is run and prints what the page shows, or is listed as not run',
  async () => {
    const page = pageText();
    const all = blocks(page);

    // The page says how its queries ran: `sqlite3 … data/inventory.db "…"`.
    const how = /Each query ran\s+as shown, with `sqlite3 ([^`]*?) data\/inventory\.db "…"`/.exec(page);
    assert.ok(how, 'the page says how its queries ran');
    const queryArgs = how[1]!.split(' ');
    assert.equal(queryArgs, ['-readonly', '-header', '-column']);

    const scratch = tempDir('auditors-guide-');
    const db = scratch.path('inventory.db');
    const postgres = await freshPostgresDatabase();
    try {
      const seen = await buildExample(db);
      const unlisted = NOT_RUN.map(([pattern]) => pattern);
      const handled = new Set<number>();
      const postgresForms: { block: Block; twin: string }[] = [];

      for (let i = 0; i < all.length; i++) {
        const block = all[i]!;
        const where = `${PAGE}:${block.line}`;
        const next = all[i + 1];
        const shown = next && next.lang === '' && !next.text.startsWith('$ ') ? next : undefined;
        const consume = () => {
          handled.add(i);
          if (shown) handled.add(++i);
        };

        const listed = NOT_RUN.findIndex(([pattern]) => pattern.test(block.text));
        if (listed >= 0) {
          assert.ok(unlisted.includes(NOT_RUN[listed]![0]), `${where}: NOT_RUN's ${String(NOT_RUN[listed]![0])} matches one block only`);
          unlisted.splice(unlisted.indexOf(NOT_RUN[listed]![0]), 1);
          handled.add(i);
          continue;
        }

        if (block.lang === 'sql' && block.heading === 'On PostgreSQL') {
          const letter = [...block.before.matchAll(/\(([a-f])\)/g)].at(-1)?.[1];
          assert.ok(letter, `${where}: the text before it says which query this is the PostgreSQL form of`);
          postgresForms.push({ block, twin: letter });
          handled.add(i);
          continue;
        }

        if (block.lang === 'sql') {
          assert.ok(shown, `${where}: a query whose output the page does not show`);
          const r = spawnSync('sqlite3', [...queryArgs, db, block.text], { encoding: 'utf8', timeout: 60_000 });
          assert.is(r.status, 0, `${where}: sqlite3 failed: ${r.stderr}`);
          assert.is(r.stderr, '', `${where}: sqlite3 warned`);
          assert.fixture(tidy(r.stdout), tidy(shown.text), `${where}: what the query prints`);
          consume();
          continue;
        }

        if (block.lang === 'sh' && block.text.startsWith(`sqlite3 -readonly -header -column ${PAGE_DB} "`)) {
          if (!shown)
            assert.ok(/printed nothing/.test(block.before), `${where}: no output shown, and the text does not say it printed nothing`);
          const r = shell(block.text, db);
          assert.is(r.status, 0, `${where}: ${r.output}`);
          assert.fixture(tidy(r.output), tidy(shown?.text ?? ''), `${where}: what the command prints`);
          consume();
          continue;
        }

        if (block.lang === 'sh' && block.heading === 'Opening the database read-only') {
          // The ways to open the database: each refuses a write, and none changes the file.
          const write = 'UPDATE inventory SET quantity = 99 WHERE pet_id = 1;\n';
          const state = () =>
            JSON.stringify(
              sqliteRows(
                db,
                'SELECT (SELECT json_group_array(hash) FROM events), (SELECT json_group_array(json_array(pet_id, quantity)) FROM inventory)',
              ),
            );
          const before = state();
          for (const line of block.text.trim().split('\n')) {
            const r = shell(line, db, { input: write });
            if (line.startsWith('sqlite3 ')) assert.match(r.output, /attempt to write a readonly database/, `${where}: ${line}`);
            else assert.is(r.status, 0, `${where}: ${line}: ${r.output}`);
          }
          assert.is(state(), before, `${where}: the database is unchanged`);
          handled.add(i);
          continue;
        }

        if (block.lang === '' && block.text.startsWith('$ ')) {
          // The verify-log story tampers with its database: it runs on a second build of the example.
          const story = block.text.split('\n').some((l) => l.startsWith('$ ') && /\s#\s/.test(l));
          const on = story ? scratch.path('story.db') : db;
          if (story) await buildExample(on);
          assert.fixture(transcript(block.text, on, scratch.dir), tidy(block.text), `${where}: what the commands print`);
          handled.add(i);
          continue;
        }

        if (block.lang === 'python') {
          writeFileSync(scratch.path('verify_chain.py'), block.text);
          handled.add(i);
          continue;
        }

        // Run against a live service by the test of their own below.
        if (block.heading === KEEPING) {
          handled.add(i);
          continue;
        }

        assert.unreachable(`${where}: a \`\`\`${block.lang} block that is neither run nor listed in NOT_RUN:\n${block.text}`);
      }
      assert.equal(unlisted, [], 'every NOT_RUN entry matches a block');
      assert.is(handled.size, all.length, 'every block was run, shown as an output, or listed');

      // The page shows the Python verifier on an intact log only; on the story's edit it must
      // see the break too, or it would verify nothing.
      const edited = scratch.path('edited.db');
      await buildExample(edited);
      Object.values(STORY)[0]!(edited);
      const r = shell(`python3 verify_chain.py ${PAGE_DB}`, edited, { cwd: scratch.dir });
      assert.equal([r.output.trim(), r.status], ['BROKEN at seq 1', 1], 'the Python verifier on an edited log');

      // GET /v1/inventory, called while the example was built, matched (f) at the times the page names.
      const f = all.find((b) => b.lang === 'sql' && b.heading.startsWith('(f)'));
      assert.ok(f, 'the page has (f)');
      assert.is(seen.length, 2);
      for (const read of seen) {
        const asOf = f.text.replace("'2026-11-21T18:57:41Z'", `'${read.matches}'`);
        const replayed = sqliteRows(db, asOf).rows.map((r) => r.slice(0, 3));
        assert.equal(replayed, read.rows, `(f) as of ${read.matches} is what GET /v1/inventory answered then`);
      }

      // PostgreSQL: a copy of the example, made with scripts/copy-store as an operator would.
      const migrated = await runScript('migrate', [], { db: postgres.url });
      assert.is(migrated.status, 0, migrated.stderr);
      const copy = await runScript('copy-store', ['--from', db, '--to', postgres.url]);
      assert.is(copy.status, 0, copy.stderr);
      const client = new pg.Client({ connectionString: postgres.url });
      await client.connect();
      try {
        const sqliteForm = (letter: string) => {
          const found = all.find((b) => b.lang === 'sql' && b.heading.startsWith(`(${letter})`));
          assert.ok(found, `the page has a query (${letter})`);
          return found;
        };
        assert.equal(
          postgresForms.map((p) => p.twin),
          ['c', 'f'],
          'the PostgreSQL forms of (c) and (f)',
        );
        for (const { block, twin } of postgresForms) {
          const expected = sqliteRows(db, sqliteForm(twin).text);
          assert.ok(expected.rows.length > 0, `(${twin}) has rows`);
          assert.equal(await postgresRows(client, block.text), expected, `${PAGE}:${block.line}: the same rows as (${twin}) on SQLite`);
        }
        // "The queries of (a), (b) and (d) below run unchanged in psql."
        const unchanged = /The queries of ([^.]*?) below run unchanged in `psql`/.exec(page);
        assert.ok(unchanged, 'the page says which queries run unchanged on PostgreSQL');
        const letters = [...unchanged[1]!.matchAll(/\(([a-f])\)/g)].map((m) => m[1]!);
        assert.equal(letters, ['a', 'b', 'd']);
        for (const letter of letters) {
          const queries = all.filter((b) => b.lang === 'sql' && b.heading.startsWith(`(${letter})`));
          assert.ok(queries.length > 0);
          for (const q of queries) {
            assert.equal(await postgresRows(client, q.text), sqliteRows(db, q.text), `${PAGE}:${q.line} on PostgreSQL, unchanged`);
          }
        }
      } finally {
        await client.end();
      }
    } finally {
      await postgres.cleanup();
      scratch.cleanup();
    }
  },
);

test('the counts the page states for naive and normalized times are those of the example', async () => {
  const page = pageText();
  const claim = /`recorded_at >= '([^']+)'` finds (\d+) events\. With\s+`strftime`, it finds the (\d+)/.exec(page);
  assert.ok(claim, 'the page states both counts');
  const [, time, naive, normalized] = claim;
  const scratch = tempDir('auditors-guide-');
  try {
    const db = scratch.path('inventory.db');
    await buildExample(db);
    const count = (sql: string) => sqliteRows(db, sql).rows[0]![0];
    assert.is(count(`SELECT count(*) FROM events WHERE recorded_at >= '${time}'`), naive);
    assert.is(count(`SELECT count(*) FROM events WHERE recorded_at >= strftime('%Y-%m-%dT%H:%M:%fZ', '${time}')`), normalized);
  } finally {
    scratch.cleanup();
  }
});

test('the request ids the page calls valid are ones the service keeps', async () => {
  const page = pageText();
  const called = [...page.matchAll(/`([^`]+)`(?: and `([^`]+)`)? (?:is a valid one|are\s+valid ones)/g)].flatMap((m) =>
    [m[1], m[2]].filter((v) => v !== undefined),
  );
  assert.ok(called.length > 0, 'the page names valid request ids');
  const t = await startApp();
  try {
    for (const id of called) {
      const res = await t.get('/v1/inventory', { 'X-Request-Id': id });
      assert.is(res.headers['x-request-id'], id, `the service keeps the request id ${id}`);
    }
  } finally {
    await t.close();
  }
});

test("the revoked key's query lists the adjustments a key made after its revocation, on both stores", async () => {
  const block = blocks(pageText()).find((b) => b.text.includes('a.recorded_at > k.revoked_at'));
  assert.ok(block, 'the page has the query');
  const sql = /"\n([\s\S]*)"\s*$/.exec(block.text)![1]!;
  const scratch = tempDir('auditors-guide-');
  const postgres = await freshPostgresDatabase();
  try {
    const db = scratch.path('inventory.db');
    await buildExample(db);
    assert.equal(sqliteRows(db, sql).rows, [], 'nothing in the example');
    // Revoked between seq 9 (18:57:41.282Z) and seq 10 (18:57:41.290Z): as if a revocation
    // had been back-dated there, the two adjustments of store-front after it are listed.
    const store = await openStore(db, { now: () => Date.parse('2026-11-21T18:57:41.285Z') });
    try {
      assert.is(await store.keys.revoke('store-front', 'cli:root'), 'revoked');
    } finally {
      await store.close();
    }
    const rows = sqliteRows(db, sql);
    assert.equal(
      rows.rows.map((r) => [r[0], r[6], r[7]]),
      [
        ['10', 'store-front', '2026-11-21T18:57:41.285Z'],
        ['11', 'store-front', '2026-11-21T18:57:41.285Z'],
      ],
    );
    assert.is((await runScript('migrate', [], { db: postgres.url })).status, 0);
    const copy = await runScript('copy-store', ['--from', db, '--to', postgres.url]);
    assert.is(copy.status, 0, copy.stderr);
    const client = new pg.Client({ connectionString: postgres.url });
    await client.connect();
    try {
      assert.equal(await postgresRows(client, sql), rows, 'the same rows on PostgreSQL, unchanged');
    } finally {
      await client.end();
    }
  } finally {
    await postgres.cleanup();
    scratch.cleanup();
  }
});

needing(test, [tools.python3])(
  'the Python verifier, like verify-log, catches a removal with the chain recomputed, a cut tail, and a key deleted, recreated or back-dated',
  async () => {
    const python = blocks(pageText()).find((b) => b.lang === 'python')!;
    const scratch = tempDir('auditors-python-');
    const dropAll = (raw: Database.Database) => {
      for (const name of raw.prepare("SELECT name FROM sqlite_master WHERE type = 'trigger'").pluck().all() as string[])
        raw.exec(`DROP TRIGGER "${name}"`);
    };
    const cases: [string, (raw: Database.Database) => void, RegExp][] = [
      [
        'an event removed, the chain recomputed',
        (raw) => (raw.exec('DELETE FROM events WHERE seq = 5'), recomputeChain(raw)),
        /^BROKEN at seq 6$/,
      ],
      [
        'the newest events cut, the chain recomputed',
        (raw) => (raw.exec('DELETE FROM events WHERE seq > 11'), recomputeChain(raw)),
        /^BROKEN: events was cut after seq 11$/,
      ],
      ['a key deleted', (raw) => raw.exec("DELETE FROM api_keys WHERE name = 'store-front'"), /^BROKEN: \('KeyCreated', 'store-front'\)/],
      [
        'a key deleted and created again',
        (raw) =>
          raw.exec(`DELETE FROM api_key_events WHERE name = 'store-front';
          UPDATE api_keys SET created_at = '2026-11-21T18:58:00.000Z' WHERE name = 'store-front';
          INSERT INTO api_key_events (type, name, key_hash, recorded_at, actor, prev_hash, hash)
            SELECT 'KeyCreated', name, hash, created_at, created_by, '', '' FROM api_keys WHERE name = 'store-front'`),
        /^BROKEN at key seq 3$/,
      ],
      [
        'a revocation back-dated',
        (raw) =>
          raw.exec(`UPDATE api_keys SET revoked_at = '2026-11-21T18:57:37.000Z', revoked_by = 'cli:root' WHERE name = 'store-front'`),
        /^BROKEN: api_keys row store-front does not match the key log$/,
      ],
    ];
    try {
      writeFileSync(scratch.path('verify_chain.py'), python.text);
      for (const [what, tamper, verdict] of cases) {
        const db = scratch.path(`${what.replaceAll(/\W+/g, '-')}.db`);
        await buildExample(db);
        withFile(db, (raw) => {
          dropAll(raw);
          tamper(raw);
        });
        const r = shell(`python3 verify_chain.py ${PAGE_DB}`, db, { cwd: scratch.dir });
        assert.is(r.status, 1, `${what}: ${r.output}`);
        assert.match(r.output.trim(), verdict, what);
        const v = shell('scripts/verify-log', db);
        assert.is(v.status, 1, `${what}: verify-log: ${v.output}`);
        assert.match(v.output, /^error: BROKEN at /, what);
      }
    } finally {
      scratch.cleanup();
    }
  },
);

needing(test, [tools.jq, tools.curl, tools.python3])(
  "the auditor's cron keeps the service's head digests; verify-log and the Python verifier check the kept list",
  async () => {
    const page = pageText();
    const kept = blocks(page).filter((b) => b.heading === KEEPING);
    assert.equal(
      kept.map((b) => b.lang),
      ['crontab', 'sh'],
    );
    const python = blocks(page).find((b) => b.lang === 'python')!;
    // The crontab line: five fields of schedule, then the command, as cron hands it to sh.
    const line = kept[0]!.text.trim();
    assert.ok(line.startsWith('*/10 * * * * '), 'every ten minutes');
    const cron = line.replace(/^(\S+\s+){5}/, '');
    const checks = kept[1]!.text.trim().split('\n');
    const scratch = tempDir('auditors-cron-');
    const t = await startApp();
    try {
      writeFileSync(scratch.path('.inventory-audit-key'), `${t.key}\n`);
      writeFileSync(scratch.path('verify_chain.py'), python.text);
      // Not spawnSync: the service answering curl runs in this process.
      const run = (line: string, db = t.db) =>
        new Promise<{ output: string; status: number | null }>((resolve, reject) => {
          const child = spawn('bash', ['-c', `exec 2>&1\n${line.replaceAll('audit-copy.db', db)}`], {
            cwd: root,
            env: { ...process.env, HOME: scratch.dir },
            stdio: ['ignore', 'pipe', 'inherit'],
            timeout: 60_000,
          });
          let output = '';
          child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
          child.on('error', reject);
          child.on('close', (status) => resolve({ output, status }));
        });
      const fetch = async () => {
        const r = await run(cron.replace('https://inventory.petstore.example', `http://127.0.0.1:${t.port}`));
        assert.is(r.status, 0, r.output);
      };
      await fetch();
      await t.track(7, 3);
      assert.is((await t.patch(7, { quantity: 4 })).status, 200);
      await t.keys.create('auditor', 'cli:root');
      await fetch();
      const lines = readFileSync(scratch.path('inventory-digests.txt'), 'utf8').trim().split('\n');
      assert.is(lines.length, 2);
      assert.match(lines[0]!, /^2026-01-02T03:04:05\.678Z 0:0{64} keys:1:[0-9a-f]{64}$/);
      assert.match(lines[1]!, /^2026-01-02T03:04:05\.678Z 2:[0-9a-f]{64} keys:2:[0-9a-f]{64}$/);

      // The kept list as the page checks it, on a consistent copy of the database.
      const copy = scratch.path('copy.db');
      const source = new Database(t.db, { readonly: true });
      try {
        source.prepare('VACUUM INTO ?').run(copy);
      } finally {
        source.close();
      }
      const copyAs = (line: string) => line.replace(/^python3 verify_chain\.py/, `python3 ${scratch.path('verify_chain.py')}`);
      for (const line of checks) {
        const r = await run(copyAs(line), copy);
        assert.is(r.status, 0, `${line}: ${r.output}`);
        assert.ok(r.output.trim().endsWith(lines[1]!.split(' ')[1]!), `${line} prints the newest kept digest: ${r.output}`);
      }
      // The newest event cut off, the chain and the counter made consistent again: only the
      // kept digest catches it, with both.
      withFile(copy, (raw) => {
        raw.exec(
          "DROP TRIGGER events_no_delete; DROP TRIGGER events_no_update; DELETE FROM events WHERE seq = 2; UPDATE sqlite_sequence SET seq = 1 WHERE name = 'events'",
        );
        recomputeChain(raw);
      });
      assert.is((await run('scripts/verify-log --db audit-copy.db', copy)).status, 0, 'consistent without the kept list');
      for (const line of checks) {
        const r = await run(copyAs(line), copy);
        assert.is(r.status, 1, `${line}: ${r.output}`);
        assert.match(r.output, /BROKEN/);
      }
    } finally {
      await t.close();
      scratch.cleanup();
    }
  },
);

test.run();
