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
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import pg from 'pg';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { tempDir } from '../kit/paths.ts';
import { freshPostgresDatabase } from '../kit/postgres-server.ts';
import { runScript } from '../kit/scripts.ts';
import { needing, tools } from '../kit/tools.ts';
import {
  PAGE,
  KEEPING,
  SIGNED,
  PAGE_DB,
  buildExample,
  type Block,
  pageText,
  blocks,
  NOT_RUN,
  LOG_VERIFIERS,
  TILE_VERIFIER,
  STORY,
  tidy,
  shell,
  transcript,
  sqliteRows,
  postgresRows,
} from '../kit/auditors-guide.ts';

const test = suite("the auditors' guide, run as written");

needing(test, [tools.sqlite3, tools.python3, tools.psql])(
  'every block of docs/auditors.md is run and prints what the page shows, or is listed as not run',
  async () => {
    const page = pageText();
    const all = blocks(page);

    // How the page's queries ran (`sqlite3 -readonly -header -column data/inventory.db "…"`):
    // their outputs are that command's.
    const queryArgs = ['-readonly', '-header', '-column'];

    const scratch = tempDir('auditors-guide-');
    const db = scratch.path('inventory.db');
    const postgres = await freshPostgresDatabase();
    try {
      const seen = await buildExample(db);
      const unlisted = NOT_RUN.map(([pattern]) => pattern);
      const handled = new Set<number>();
      const postgresForms: { block: Block; twin: string }[] = [];
      // Queries wrapped in a sqlite3 command whose text says they run unchanged in psql.
      const unchangedInPsql: Block[] = [];

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
          if (/runs\s+unchanged in `psql`/.test(block.before)) unchangedInPsql.push(block);
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

        // Run against a service by a test of their own (auditors-guide-log-verifiers).
        if (LOG_VERIFIERS.includes(block.heading) || block.heading === TILE_VERIFIER) {
          handled.add(i);
          continue;
        }

        if (block.lang === 'python') {
          writeFileSync(scratch.path('verify_chain.py'), block.text);
          handled.add(i);
          continue;
        }

        // Run against a live service by the tests of their own (auditors-guide-verifiers,
        // signed-log.test.ts).
        if (block.heading === KEEPING || block.heading === SIGNED || block.text.includes('/v1/events?after=')) {
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
        // The queries the page gives for both stores: the same rows on PostgreSQL.
        for (const letter of ['a', 'b', 'd']) {
          const queries = all.filter((b) => b.lang === 'sql' && b.heading.startsWith(`(${letter})`));
          assert.ok(queries.length > 0);
          for (const q of queries) {
            assert.equal(await postgresRows(client, q.text), sqliteRows(db, q.text), `${PAGE}:${q.line} on PostgreSQL, unchanged`);
          }
        }
        // The sqlite3 commands whose text says their query runs unchanged in psql: the clock
        // check and the adjustments after a revocation.
        assert.is(unchangedInPsql.length, 2, 'two sqlite3 commands run unchanged in psql');
        for (const block of unchangedInPsql) {
          const sql = /"\n([\s\S]*)"\s*$/.exec(block.text)![1]!;
          assert.equal(await postgresRows(client, sql), sqliteRows(db, sql), `${PAGE}:${block.line} on PostgreSQL, unchanged`);
        }
        // The Python verifier, given the URL, reads the same rows through psql and prints the same digest.
        const onSqlite = shell(`python3 verify_chain.py ${PAGE_DB}`, db, { cwd: scratch.dir });
        const onPostgres = spawnSync('python3', ['verify_chain.py', postgres.url], { cwd: scratch.dir, encoding: 'utf8', timeout: 60_000 });
        assert.is(onPostgres.status, 0, onPostgres.stderr);
        assert.match(onSqlite.output, /^13:[0-9a-f]{64}\n$/);
        assert.is(onPostgres.stdout, onSqlite.output, 'the same digest from PostgreSQL');
      } finally {
        await client.end();
      }
    } finally {
      await postgres.cleanup();
      scratch.cleanup();
    }
  },
);

test.run();
