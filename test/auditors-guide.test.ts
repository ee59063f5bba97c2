// docs/auditors.md, run as written: its example database is built as the guide describes
// it (the times, actors and request ids its outputs show), then every query and command
// of the page runs on it and its output is compared with the page's, byte for byte
// (trailing spaces aside). A block the test neither runs nor lists below fails it, so a
// new example cannot go untested.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { Command } from '../src/domain/decide.ts';
import { commandsOn } from './kit/fixtures.ts';
import { root, tempDir } from './kit/paths.ts';
import { freshPostgresDatabase } from './kit/postgres-server.ts';
import { runScript } from './kit/scripts.ts';
import { sqliteTarget } from './kit/sqlite-target.ts';

const PAGE = 'docs/auditors.md';
const BIG = 9007199254740993n;
const MAX = 9223372036854775807n;

// The example database, as the guide describes it. Times, actors and request ids are the
// ones its outputs show; the few no output shows (the bootstrap key's time, seq 2's time,
// the request ids of seq 2 to 4 and 12) are any values consistent with the story.
const KEYS: { at: string; name: string; by: string }[] = [
  { at: '2026-11-21T18:57:36.500Z', name: 'bootstrap', by: 'service' },
  { at: '2026-11-21T18:57:36.992Z', name: 'store-front', by: 'cli:root' },
];
const set = (petId: bigint, quantity: number): Command => ({ type: 'SetQuantity', petId, quantity });
const EVENTS: { at: string; actor: string; requestId: string; commands: Command[] }[] = [
  {
    at: '2026-11-21T18:57:37.408Z',
    actor: 'cli:root',
    requestId: 'bb61db45-26f0-4842-b75a-850e0a1a993c',
    commands: [{ type: 'TrackPet', petId: 1n, quantity: 5, status: 'available' }],
  },
  {
    at: '2026-11-21T18:57:37.900Z',
    actor: 'cli:root',
    requestId: '5f0c1d2e-0000-4000-8000-000000000002',
    commands: [{ type: 'TrackPet', petId: BIG, quantity: 0, status: 'available' }],
  },
  {
    at: '2026-11-21T18:57:38.389Z',
    actor: 'cli:root',
    requestId: '5f0c1d2e-0000-4000-8000-000000000003',
    commands: [
      { type: 'TrackPet', petId: 10n, quantity: 3, status: 'available' },
      { type: 'TrackPet', petId: MAX, quantity: 1, status: 'pending' },
    ],
  },
  { at: '2026-11-21T18:57:39.657Z', actor: 'bootstrap', requestId: 'recount-42', commands: [set(1n, 7)] },
  { at: '2026-11-21T18:57:39.670Z', actor: 'bootstrap', requestId: 'fa63d48c-375a-481a-acfa-10e12e276869', commands: [set(1n, 8)] },
  {
    at: '2026-11-21T18:57:40.028Z',
    actor: 'cli:root',
    requestId: '0ade1acb-757d-418c-a55d-b76308e26c6e',
    commands: [{ type: 'SetStatus', petId: 1n, status: 'pending' }],
  },
  { at: '2026-11-21T18:57:41.272Z', actor: 'store-front', requestId: '8fe6f289-f2af-438f-93d3-251866484765', commands: [set(1n, 6)] },
  { at: '2026-11-21T18:57:41.282Z', actor: 'store-front', requestId: 'f74df90f-4db7-46a1-9ae4-2c58b6336cb1', commands: [set(1n, 6)] },
  { at: '2026-11-21T18:57:41.290Z', actor: 'store-front', requestId: '849e0aea-24e1-4d45-b134-0180cca7b5d4', commands: [set(BIG, 12)] },
  { at: '2026-11-21T18:57:41.298Z', actor: 'store-front', requestId: '1740042a-905a-4062-b800-945951731875', commands: [set(10n, 0)] },
  {
    at: '2026-11-21T18:57:42.871Z',
    actor: 'cli:root',
    requestId: '5f0c1d2e-0000-4000-8000-000000000012',
    commands: [{ type: 'SetStatus', petId: 10n, status: 'sold' }],
  },
  { at: '2026-11-21T18:57:42.922Z', actor: 'bootstrap', requestId: 'delivery-2026-11-21', commands: [set(BIG, 40)] },
];

async function buildExample(db: string): Promise<void> {
  let clock = 0;
  const store = await sqliteTarget().open(db, { now: () => clock });
  try {
    for (const key of KEYS) {
      clock = Date.parse(key.at);
      await store.keys.create(key.name, key.by);
    }
    const commands = commandsOn(store, () => clock);
    for (const step of EVENTS) {
      clock = Date.parse(step.at);
      await commands.handleAll(step.commands, { actor: step.actor, requestId: step.requestId });
    }
  } finally {
    await store.close();
  }
}

interface Block {
  lang: string;
  text: string;
  line: number;
}

function blocks(): Block[] {
  const page = readFileSync(join(root, PAGE), 'utf8');
  return [...page.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)].map((m) => ({
    lang: m[1]!,
    text: m[2]!,
    line: page.slice(0, m.index).split('\n').length,
  }));
}

// Blocks that are not examples to run, each with the reason.
const NOT_RUN: [RegExp, string][] = [
  [/^sqlite3 -readonly data\/inventory\.db\s+# the sqlite3 shell/, 'ways to open the database interactively'],
  [/^PGOPTIONS=/, "connects to the reader's own server (HOST)"],
  [/^scripts\/audit \[--pet/, "the command's usage text"],
  [/^hash = SHA-256\(/, 'the encoding, written out'],
  [
    /^\$ scripts\/verify-log\n/,
    'a story on another database over time (tampered, then recomputed); test/verify-log.test.ts runs each step of it',
  ],
];

const tidy = (text: string) =>
  text
    .split('\n')
    .map((l) => l.trimEnd())
    .join('\n')
    .trim();

function sqlite3(db: string, sql: string): string {
  const r = spawnSync('sqlite3', ['-readonly', '-header', '-column', db, sql], { encoding: 'utf8', timeout: 30_000 });
  assert.is(r.status, 0, `sqlite3 failed on:\n${sql}\n${r.stderr}`);
  return r.stdout;
}

/** Runs the `$ command` lines of a block (data/inventory.db is the example's path) and returns the transcript. */
async function transcript(text: string, db: string, dir: string): Promise<string> {
  const out: string[] = [];
  for (const line of text.split('\n').filter((l) => l.startsWith('$ '))) {
    // Standard error is never part of a transcript: its redirection changes nothing here.
    const command = line
      .slice(2)
      .replace(/\s+#.*$/, '')
      .replace(/\s+2>\/dev\/null$/, '');
    out.push(line);
    if (command.startsWith('python3 verify_chain.py ')) {
      const r = spawnSync('python3', [join(dir, 'verify_chain.py'), db], { encoding: 'utf8', timeout: 30_000 });
      assert.is(r.status, 0, r.stderr);
      out.push(r.stdout.trimEnd());
      continue;
    }
    const [script, ...args] = command.split(/\s+/);
    const name = /^scripts\/([\w-]+)$/.exec(script!)?.[1];
    assert.ok(name, `${line}: only scripts/… and python3 verify_chain.py are run`);
    const r = await runScript(name, args, { env: { INVENTORY_DB: db } });
    assert.is(r.status, 0, `${line}: ${r.stderr}`);
    out.push(r.stdout.trimEnd());
  }
  return out.join('\n');
}

const test = suite("the auditors' guide, run as written");

test('every query and command of docs/auditors.md prints what the page shows', async () => {
  if (spawnSync('sqlite3', ['-version']).status !== 0) {
    console.log("SKIPPED auditors' guide: no sqlite3 shell here (apt-get install -y sqlite3)");
    return;
  }
  const dir = tempDir('auditors-guide-');
  const db = dir.path('inventory.db');
  const postgres = await freshPostgresDatabase();
  try {
    await buildExample(db);
    const all = blocks();
    let ran = 0;
    const pgQueries: string[] = [];
    for (let i = 0; i < all.length; i++) {
      const block = all[i]!;
      const where = `${PAGE}:${block.line}`;
      const next = all[i + 1];
      const shownOutput = next && next.lang === '' && !next.text.startsWith('$ ') ? next : undefined;
      if (NOT_RUN.some(([pattern]) => pattern.test(block.text))) continue;
      if (block.lang === 'sql' && /to_char\(|DISTINCT ON/.test(block.text)) {
        pgQueries.push(block.text);
        continue;
      }
      if (block.lang === 'sql' || (block.lang === 'sh' && block.text.startsWith('sqlite3 -readonly -header -column data/inventory.db "'))) {
        const sql = block.lang === 'sql' ? block.text : block.text.slice(block.text.indexOf('"') + 1, block.text.lastIndexOf('"'));
        const printed = sqlite3(db, sql);
        assert.fixture(tidy(printed), tidy(shownOutput?.text ?? ''), `${where}: what the query prints`);
        if (shownOutput) i++;
        ran++;
        continue;
      }
      if (block.lang === '' && block.text.startsWith('$ ')) {
        assert.fixture(await transcript(block.text, db, dir.dir), tidy(block.text), `${where}: what the commands print`);
        ran++;
        continue;
      }
      if (block.lang === 'python') {
        writeFileSync(dir.path('verify_chain.py'), block.text);
        ran++;
        continue;
      }
      assert.unreachable(`${where}: a \`\`\`${block.lang} block that is neither run nor listed as not run:\n${block.text}`);
    }
    assert.ok(ran >= 15, `${ran} examples run`);
    assert.ok(existsSync(dir.path('verify_chain.py')), 'the Python verifier was written and run');

    // The PostgreSQL forms of (c) and (f): on a copy of the example in PostgreSQL, the
    // same rows as their SQLite forms give on the file.
    const migrated = await runScript('migrate', [], { db: postgres.url });
    assert.is(migrated.status, 0, migrated.stderr);
    const copy = await runScript('copy-store', ['--from', db, '--to', postgres.url]);
    assert.is(copy.status, 0, copy.stderr);
    const client = new pg.Client({ connectionString: postgres.url });
    await client.connect();
    try {
      assert.is(pgQueries.length, 2, 'the two PostgreSQL queries');
      const sqliteForms = all.filter((b) => b.lang === 'sql' && !/to_char\(|DISTINCT ON/.test(b.text));
      for (const pgSql of pgQueries) {
        const rows = (await client.query({ text: pgSql, rowMode: 'array' })).rows as unknown[][];
        const twin = pgSql.includes('DISTINCT ON')
          ? sqliteForms.find((b) => b.text.startsWith("WITH asof(t) AS (VALUES (strftime('%Y-%m-%dT%H:%M:%fZ', '2026-11-21T18:57:41Z')))"))!
          : sqliteForms.find(
              (b) =>
                b.text.includes("strftime('%Y-%m-%dT%H:%M:%fZ', '2026-11-21T18:57:41Z')") &&
                b.text.startsWith('SELECT seq, recorded_at, pet_id, type, data, actor'),
            )!;
        assert.ok(twin, `the SQLite form of:\n${pgSql}`);
        const expected = sqlite3(db, twin.text.replace(/;\s*$/, '') + ';');
        const asColumns = expected
          .trim()
          .split('\n')
          .slice(2)
          .map((l) => l.trim().split(/\s{2,}/));
        assert.equal(
          rows.map((r) => r.map(String)),
          asColumns,
          `the PostgreSQL form gives the SQLite form's rows:\n${pgSql}`,
        );
      }
    } finally {
      await client.end();
    }
  } finally {
    await postgres.cleanup();
    dir.cleanup();
  }
});

test.run();
