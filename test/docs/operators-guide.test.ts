// docs/operators.md, run as written: each transcript on the page (`$ command` lines and
// what they printed) runs in a fresh directory whose database is in the state the page
// describes, and prints what the page shows. Only what changes from run to run is masked
// on both sides: times, durations, digests. A `…` line on the page stands for any lines.
// A block the test neither runs nor lists below fails it.
import { spawnSync } from 'node:child_process';
import { symlinkSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { GENESIS_HASH, keyEventHash } from '../../src/store/hash-chain.ts';
import { root, tempDir, type TempDir } from '../kit/paths.ts';
import { fencedBlocks } from '../kit/docs.ts';

const PAGE = 'docs/operators.md';

/** Runs a line as a shell would, in dir (scripts/ links to this checkout's), stdout and stderr together. */
function sh(dir: string, line: string): string {
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1' };
  delete env.INVENTORY_DB;
  delete env.FORCE_COLOR;
  const r = spawnSync('bash', ['--noprofile', '--norc', '-c', `${line} 2>&1`], { cwd: dir, env, encoding: 'utf8', timeout: 60_000 });
  return r.stdout;
}

/** One line with what changes from run to run masked: times, durations, digests. */
function maskLine(line: string): string {
  return line
    .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/g, '<time>')
    .replace(/\bin \d+(\.\d+)? (ms|s)\b/g, 'in <duration>')
    .replace(/\b\d+:[0-9a-f]{64}\b/g, '<digest>')
    .trimEnd();
}

function mask(text: string): string {
  return text.split('\n').map(maskLine).join('\n').trim();
}

/** Whether printed matches shown, where a shown line `…` or `...` stands for any lines. */
function matches(printed: string[], shown: string[]): boolean {
  if (shown.length === 0) return printed.length === 0;
  const [first, ...rest] = shown;
  if (first === '…' || first === '...') return printed.some((_, i) => matches(printed.slice(i), rest)) || matches([], rest);
  return printed.length > 0 && printed[0] === first && matches(printed.slice(1), rest);
}

/** The state each transcript starts from, as the page describes it, in a fresh directory. */
const GIVEN: [RegExp, (dir: TempDir) => void][] = [
  // A database that does not exist yet.
  [/^\$ scripts\/migrate --db data\/inventory\.db\n/, () => {}],
  // The service created the bootstrap key; the operator then created store-front.
  [
    /^\$ scripts\/keys list\n/,
    (dir) => {
      sh(dir.dir, 'scripts/migrate --db data/inventory.db');
      const db = new Database(dir.path('data/inventory.db'));
      // At the time the page shows: the key itself is never shown, so any hash will do; the
      // key log's event comes first, as the table's triggers require.
      const key = { name: 'bootstrap', keyHash: '0'.repeat(64), recordedAt: '2026-11-21T18:45:04.725Z', actor: 'service:first-start' };
      const hash = keyEventHash({ prevHash: GENESIS_HASH, seq: 1, type: 'KeyCreated', ...key });
      db.prepare(
        "INSERT INTO api_key_events (seq, type, name, key_hash, recorded_at, actor, prev_hash, hash) VALUES (1, 'KeyCreated', ?, ?, ?, ?, ?, ?)",
      ).run(key.name, key.keyHash, key.recordedAt, key.actor, GENESIS_HASH, hash);
      db.prepare('INSERT INTO api_keys (name, hash, created_at, created_by) VALUES (?, ?, ?, ?)').run(
        key.name,
        key.keyHash,
        key.recordedAt,
        key.actor,
      );
      db.close();
      sh(dir.dir, 'scripts/keys create store-front --db data/inventory.db');
    },
  ],
  // A database with no pets.
  [
    /^\$ cat pets\.json\n/,
    (dir) =>
      void sh(
        dir.dir,
        `scripts/migrate --db data/inventory.db && printf '%s\\n' '[' '  {"petId": 10, "quantity": 3},' '  {"petId": 9223372036854775807, "status": "pending", "quantity": 1}' ']' > pets.json`,
      ),
  ],
  // Pets 1, 2 and 3, pet 1 set to pending (4 events), then pet 1's row edited by hand.
  [
    /^\$ scripts\/rebuild-projection --check\n/,
    (dir) => {
      sh(
        dir.dir,
        'scripts/migrate --db data/inventory.db && scripts/track 1 --quantity 5 && scripts/track 2 && scripts/track 3 && scripts/set-status 1 pending',
      );
      const db = new Database(dir.path('data/inventory.db'));
      db.prepare("UPDATE inventory SET quantity = 999, status = 'sold' WHERE pet_id = 1").run();
      db.close();
    },
  ],
];

const NOT_RUN: [RegExp, string][] = [
  [/^npm ci && npm start/, 'installs and starts: CI runs exactly this on a fresh clone'],
  [/^npm install --prefix \/opt\/node24-headers/, "CI's Node 24 step does this"],
  [/^\{"level":30/, 'log lines, with the fields the access-log tests check'],
  [
    /^pg_dump /,
    'test/cli/backup.test.ts runs it, with the roles of docs/scaling.md, on a PostgreSQL server of the version of this pg_dump',
  ],
  [/^scrape_configs:/, "Prometheus's own configuration; test/kit/prometheus.ts writes one like it"],
  [/^# Error rate/, 'PromQL: test/docs/dashboard.test.ts evaluates it on a real Prometheus'],
];

const test = suite("the operators' guide, run as written");

test('every transcript of docs/operators.md prints what the page shows', () => {
  const page = fencedBlocks(PAGE, '');
  const all = [...fencedBlocks(PAGE, 'sh'), ...page, ...fencedBlocks(PAGE, 'yaml'), ...fencedBlocks(PAGE, 'promql')];
  let ran = 0;
  for (const block of all) {
    if (NOT_RUN.some(([pattern]) => pattern.test(block))) continue;
    if (block.startsWith('$ PORT=abc npm start\n')) {
      const printed = sh(root, 'PORT=abc npm start').split('\n');
      assert.ok(
        matches(
          printed.map((l) => l.trimEnd()).filter((l) => l !== ''),
          ['…', 'petstore-inventory: PORT must be a port number from 0 to 65535, not "abc"'],
        ),
        printed.join('\n'),
      );
      ran++;
      continue;
    }
    const given = GIVEN.find(([pattern]) => pattern.test(block));
    if (!given && (block.startsWith('scripts/backup ') || block.startsWith('ok: '))) continue; // the backup pair: below
    assert.ok(given, `${PAGE}: a block that is neither run nor listed as not run:\n${block}`);
    const dir = tempDir('operators-guide-');
    try {
      symlinkSync(join(root, 'scripts'), dir.path('scripts'));
      given[1](dir);
      const lines = block.trimEnd().split('\n');
      const commands = lines.map((l, i) => [l, i] as const).filter(([l]) => l.startsWith('$ '));
      commands.forEach(([line, i], k) => {
        const shown = lines.slice(i + 1, commands[k + 1]?.[1] ?? lines.length);
        const printed = mask(sh(dir.dir, line.slice(2)))
          .split('\n')
          .filter((l) => l !== '');
        assert.ok(
          matches(
            printed,
            shown.map(maskLine).filter((l) => l !== ''),
          ),
          `${line}\nprinted:\n${printed.join('\n')}\nshown:\n${shown.join('\n')}`,
        );
      });
      ran++;
    } finally {
      dir.cleanup();
    }
  }
  assert.ok(ran >= 5, `${ran} transcripts run`);
});

test('the backup example: the command as shown, and an output of the form shown', () => {
  const [command] = fencedBlocks(PAGE, 'sh').filter((b) => b.startsWith('scripts/backup '));
  const shown = fencedBlocks(PAGE, '').find((b) => b.startsWith('ok: '))!;
  const dir = tempDir('operators-guide-');
  try {
    symlinkSync(join(root, 'scripts'), dir.path('scripts'));
    sh(dir.dir, 'scripts/migrate --db data/inventory.db && scripts/track 1 && scripts/track 2');
    const printed = mask(sh(dir.dir, command!.trim()));
    // The page's copy held a busier database: only the number of events differs.
    assert.is(printed, mask(shown).replace(/\b\d+ events\b/, '2 events'));
  } finally {
    dir.cleanup();
  }
});

test.run();
