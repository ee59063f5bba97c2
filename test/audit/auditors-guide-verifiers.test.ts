// docs/auditors.md's Python verifier and its auditor's cron, run against tampered copies
// of the example and a live service (test/kit/auditors-guide.ts).
import { spawn, spawnSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import * as assert from 'uvu/assert';
import { root, tempDir } from '../kit/paths.ts';
import { startApp } from '../kit/app.ts';
import { runScript } from '../kit/scripts.ts';
import { endorse, newSigningKey } from '../kit/signing-keys.ts';
import { commandsOn } from '../kit/fixtures.ts';
import { makeSigner, receiptHeader } from '../../src/support/signing.ts';
import { recomputeChain, withFile } from '../kit/tamper.ts';
import { needing, tools } from '../kit/tools.ts';
import { KEEPING, PAGE_DB, buildExample, pageText, blocks, shell } from '../kit/auditors-guide.ts';
import { suite } from 'uvu';

const test = suite("the auditors' guide: the Python verifier and the cron");
const SIGNING_KEY = { pem: generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }) as string };

/** Runs a bash script with HOME set, its standard output collected (not spawnSync: the
 * service it may call runs in this process). */
function bash(script: string, cwd: string, home: string): Promise<{ output: string; status: number | null }> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', script], {
      cwd,
      env: { ...process.env, HOME: home },
      stdio: ['ignore', 'pipe', 'inherit'],
      timeout: 60_000,
    });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.on('error', reject);
    child.on('close', (status) => resolve({ output, status }));
  });
}

/** Runs sql on a SQLite file past the named triggers, recomputes the chain and puts the
 * triggers back: a rewrite that the chain alone does not show. */
function rewrite(path: string, triggers: string[], sql: string): void {
  withFile(path, (raw) => {
    const guards = raw
      .prepare(`SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name IN (${triggers.map(() => '?').join(', ')})`)
      .pluck()
      .all(...triggers) as string[];
    for (const name of triggers) raw.exec(`DROP TRIGGER ${name}`);
    raw.exec(sql);
    recomputeChain(raw);
    for (const guard of guards) raw.exec(guard);
  });
}

/** A consistent copy of a SQLite database, as the page makes one; returns its path. */
function copyOf(db: string, to: string): string {
  const source = new Database(db, { readonly: true });
  try {
    source.prepare('VACUUM INTO ?').run(to);
  } finally {
    source.close();
  }
  return to;
}

/** Of pet 7 tracked at 3 (seq 1) and set to 4 (seq 2): seq 2 cut off, the counter and the
 * projection made consistent again. */
function cutNewestEvent(copy: string): void {
  rewrite(
    copy,
    ['events_no_delete', 'events_no_update', 'stock_adjustments_no_delete'],
    `DELETE FROM events WHERE seq = 2;
     DELETE FROM stock_adjustments WHERE seq = 2;
     UPDATE sqlite_sequence SET seq = 1 WHERE name = 'events';
     UPDATE inventory SET quantity = 3, version = 1, updated_at = (SELECT recorded_at FROM events WHERE seq = 1) WHERE pet_id = 7`,
  );
}

/** The same, standard error in the output too. */
function bashWithErrors(script: string, home: string): Promise<{ output: string; status: number | null }> {
  return bash(`exec 2>&1\n${script}`, home, home);
}

needing(test, [tools.python3])(
  'the Python verifier, like verify-log, catches a removal with the chain recomputed, a cut tail, a Merkle tree node rewritten or added, and a key deleted, recreated or back-dated',
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
        'a node of the Merkle tree rewritten',
        (raw) => raw.exec('UPDATE tree_nodes SET hash = zeroblob(32) WHERE level = 1 AND idx = 2'),
        /^BROKEN: the Merkle tree's node at level 1, index 2 is not the one the events make$/,
      ],
      [
        'a node added to the Merkle tree',
        (raw) => raw.exec('INSERT INTO tree_nodes (level, idx, hash) VALUES (0, 99, zeroblob(32))'),
        /^BROKEN: the Merkle tree's node at level 0, index 99 is not the one the events make$/,
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
        /^BROKEN at key seq 4$/,
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
    const t = await startApp({ signingKey: SIGNING_KEY });
    try {
      writeFileSync(scratch.path('.inventory-audit-key'), `${t.key}\n`);
      writeFileSync(scratch.path('verify_chain.py'), python.text);
      // Not spawnSync: the service answering curl runs in this process.
      const run = (line: string, db = t.db) => bash(`exec 2>&1\n${line.replaceAll('audit-copy.db', db)}`, root, scratch.dir);
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
      assert.is(lines.length, 2, JSON.stringify(lines));
      assert.match(lines[0]!, /^2026-01-02T03:04:05\.678Z 0:0{64} keys:2:[0-9a-f]{64}$/, lines[0]);
      assert.match(lines[1]!, /^2026-01-02T03:04:05\.678Z 2:[0-9a-f]{64} keys:3:[0-9a-f]{64}$/, lines[1]);

      // The kept list as the page checks it, on a consistent copy of the database.
      const copy = copyOf(t.db, scratch.path('copy.db'));
      const copyAs = (line: string) => line.replace(/^python3 verify_chain\.py/, `python3 ${scratch.path('verify_chain.py')}`);
      for (const line of checks) {
        const r = await run(copyAs(line), copy);
        assert.is(r.status, 0, `${line}: ${r.output}`);
        assert.ok(r.output.trim().endsWith(lines[1]!.split(' ')[1]!), `${line} prints the newest kept digest: ${r.output}`);
      }
      // The newest event cut off, the chain, the counter and the projection made consistent
      // again, the triggers put back: only the kept digest catches it, with both.
      cutNewestEvent(copy);
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

needing(test, [tools.python3])(
  "the Python verifier checks the digests of the signed-head cron's JSON lines, and refuses a kept list it cannot read",
  async () => {
    const python = blocks(pageText()).find((b) => b.lang === 'python')!;
    const scratch = tempDir('auditors-heads-');
    const t = await startApp({ signingKey: SIGNING_KEY });
    try {
      writeFileSync(scratch.path('verify_chain.py'), python.text);
      const verify = (...args: string[]) =>
        spawnSync('python3', [scratch.path('verify_chain.py'), ...args], { encoding: 'utf8', timeout: 60_000 });
      // The cron's lines: /v1/log/head answers, one a line.
      const heads: string[] = [];
      const keep = async () => {
        const head = await t.get('/v1/log/head');
        assert.is(head.status, 200, head.text);
        heads.push(head.text);
      };
      await keep();
      await t.track(7, 3);
      assert.is((await t.patch(7, { quantity: 4 })).status, 200);
      await keep();
      const kept = scratch.path('inventory-heads.jsonl');
      writeFileSync(kept, `${heads.join('\n')}\n`);
      const newest = JSON.parse(heads[1]!) as { seq: number; hash: string };
      const copy = copyOf(t.db, scratch.path('copy.db'));
      const intact = verify(copy, kept);
      assert.is(intact.status, 0, intact.stderr);
      assert.is(intact.stdout, `${newest.seq}:${newest.hash}\n`);

      // What it cannot read is refused (exit 1, saying what it expected), never passed.
      const unreadable: [string, string, RegExp][] = [
        [
          'a JSON line without seq and hash',
          '{"time":"2026-01-02T03:04:05.678Z"}\n',
          /line 1: expected TIME SEQ:HASH keys:SEQ:HASH or a \/v1\/log\/head answer \(JSON\)/,
        ],
        ['a line that is neither', `${heads[0]}\nnot a head\n`, /line 2: expected TIME SEQ:HASH/],
        ['a broken JSON line', `${heads[0]!.slice(0, 40)}\n`, /line 1: expected/],
        ['a time and no digest', '2026-01-02T03:04:05.678Z\n', /line 1: expected/],
        ['nothing', '', /no kept head in it/],
      ];
      for (const [what, text, message] of unreadable) {
        writeFileSync(scratch.path('unreadable'), text);
        const r = verify(copy, scratch.path('unreadable'));
        assert.is(r.status, 1, `${what}: ${r.stdout}${r.stderr}`);
        assert.match(r.stderr, message, what);
        assert.is(r.stdout, '', `${what}: no digest printed`);
      }
      for (const args of [[], [copy, kept, kept]]) {
        const r = verify(...args);
        assert.is(r.status, 2, `usage: ${r.stderr}`);
        assert.match(r.stderr, /^usage: python3 verify_chain\.py DATABASE \[KEPT_HEADS\]/);
      }

      // The newest event cut off with everything made consistent again: the kept head catches it.
      cutNewestEvent(copy);
      const cut = verify(copy, kept);
      assert.is(cut.status, 1, cut.stdout);
      assert.match(cut.stderr, new RegExp(`^BROKEN: events does not extend ${newest.seq}:${newest.hash}`));
    } finally {
      await t.close();
      scratch.cleanup();
    }
  },
);

needing(test, [tools.jq, tools.curl])(
  "the client's check compares seq and hash of each event in its key's name with its receipts (both versions), through the feed",
  async () => {
    const block = blocks(pageText()).find((b) => b.text.includes('/v1/events?after='));
    assert.ok(block, 'the page has the check');
    const scratch = tempDir('auditors-receipts-');
    const t = await startApp({ signingKey: SIGNING_KEY });
    try {
      const writer = await t.keys.create('store-front', 'cli:root');
      writeFileSync(scratch.path('.inventory-audit-key'), `${await t.keys.create('auditor', 'cli:root', 'read-only')}\n`);
      const auth = { Authorization: `Bearer ${writer}` };
      // More events than one page, so that the loop turns the page.
      for (let pet = 1; pet <= 3; pet++) await t.track(pet, 1);
      const receipts: string[] = [];
      for (let i = 0; i < 4; i++) {
        const res = await t.patch(1 + (i % 3), { quantity: 19 + i }, auth);
        assert.is(res.status, 200);
        receipts.push(String(res.headers['log-receipt']));
      }
      assert.is((await t.patch(2, { quantity: 5 })).status, 200, 'another key writes too');
      assert.ok(
        receipts.every((r) => r.startsWith('v=2, ')),
        receipts.join('\n'),
      );
      // As a client keeps them: some with the header's name, one of the first version.
      const mine = (await t.events()).filter((e) => e.actor === 'store-front');
      const first = mine[0]!;
      const v1 = receiptHeader(makeSigner(SIGNING_KEY), /log="([^"]+)"/.exec(receipts[0]!)![1]!, first.seq, first.hash!);
      const kept = [v1, `Log-Receipt: ${receipts[1]}`, receipts[2], '', receipts[3], receipts[3]];
      writeFileSync(scratch.path('my-receipts.txt'), `${kept.join('\n')}\n`);
      const script = block.text
        .replace('https://inventory.petstore.example', `http://127.0.0.1:${t.port}`)
        .replace('limit=1000', 'limit=3');
      const run = () => bash(script, scratch.dir, scratch.dir);
      assert.equal(await run(), { output: '', status: 0 }, 'every event in the name is one with a receipt');

      // The client's newest event rewritten (quantity 22 -> 2), the chain recomputed: the
      // same seq with another hash. Both the event and the receipt are named.
      const rewritten = mine[3]!;
      rewrite(
        t.db,
        ['events_no_update'],
        `UPDATE events SET data = replace(data, '"quantity":22', '"quantity":2') WHERE seq = ${rewritten.seq}`,
      );
      const after = (await t.events()).find((e) => e.seq === rewritten.seq)!;
      assert.is.not(after.hash, rewritten.hash, 'the tampering changed the hash');
      assert.equal(await run(), {
        output: `in my name, no receipt: ${after.seq} ${after.hash}\nmy receipt, not in the log: ${rewritten.seq} ${rewritten.hash}\n`,
        status: 1,
      });

      // A line that is not a receipt (here the seqs the check once kept) is refused, not skipped.
      writeFileSync(scratch.path('my-receipts.txt'), `${mine.map((e) => e.seq).join('\n')}\n`);
      const refused = await bashWithErrors(script, scratch.dir);
      assert.is(refused.status, 1, refused.output);
      assert.match(refused.output, /my-receipts\.txt: expected a Log-Receipt a line/);
      writeFileSync(scratch.path('my-receipts.txt'), `${kept.join('\n')}\n`);

      // An event in the key's name that its holder did not make (no receipt for it).
      await commandsOn(t.store).handle({ type: 'SetQuantity', petId: 3n, quantity: 99 }, { actor: 'store-front', requestId: 'forged' });
      const forged = (await t.events()).at(-1)!;
      const listed = await run();
      assert.is(listed.status, 1);
      assert.ok(listed.output.includes(`in my name, no receipt: ${forged.seq} ${forged.hash}\n`), listed.output);
      // A page that cannot be read fails the check rather than passing it.
      writeFileSync(scratch.path('.inventory-audit-key'), 'pinv_notakeynotakeynotakeynotakey1\n');
      assert.is.not((await run()).status, 0, 'a refused key fails the check');
    } finally {
      await t.close();
      scratch.cleanup();
    }
  },
);

needing(test, [tools.python3])('the Python verifier passes a log whose signing key was rotated: endorsed, then retired', async () => {
  const python = blocks(pageText()).find((b) => b.lang === 'python')!;
  const scratch = tempDir('auditors-rotated-');
  const t = await startApp({ signingKey: SIGNING_KEY });
  try {
    writeFileSync(scratch.path('verify_chain.py'), python.text);
    await t.track(7, 3);
    const next = newSigningKey();
    await endorse(t.db, SIGNING_KEY, next);
    const retired = await runScript('keys', ['retire-signing', makeSigner(SIGNING_KEY).keyId, '--db', t.db]);
    assert.is(retired.status, 0, retired.stderr);
    const r = spawnSync('python3', [scratch.path('verify_chain.py'), copyOf(t.db, scratch.path('copy.db'))], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.is(r.status, 0, r.stderr);
    assert.match(r.stdout, /^1:[0-9a-f]{64}\n$/);
  } finally {
    await t.close();
    scratch.cleanup();
  }
});

test.run();
