// docs/auditors.md's queries on a copy: the guide's example database served by the
// service, copied by scripts/mirror, and every query of the page run on the copy's
// events.db with sqlite3 prints what the page shows, except the one that reads the API
// keys, which a copy does not hold: it runs and finds none.
import { spawnSync } from 'node:child_process';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { openStore } from '../../src/store/open.ts';
import { startApp } from '../kit/app.ts';
import { blocks, buildExample, EXAMPLE_SIGNING_KEY, NOT_RUN, pageText, tidy } from '../kit/auditors-guide.ts';
import { tempDir } from '../kit/paths.ts';
import { runScript } from '../kit/scripts.ts';
import { needing, tools } from '../kit/tools.ts';

const test = suite("the auditors' guide's queries on a copy's events.db");

needing(test, [tools.sqlite3])("every query prints the page's answer on events.db; the keys' query finds none", async () => {
  const scratch = tempDir('auditors-copy-');
  const db = scratch.path('inventory.db');
  try {
    await buildExample(db);
    const t = await startApp({
      signingKey: EXAMPLE_SIGNING_KEY,
      realClock: true,
      open: (_fresh, now) => openStore(db, { now, signingKey: EXAMPLE_SIGNING_KEY }),
    });
    try {
      const copied = await runScript('mirror', ['--url', `http://127.0.0.1:${t.port}`, scratch.path('copy')], {
        env: { INVENTORY_KEY: t.key },
        timeoutMs: 120_000,
      });
      assert.is(copied.status, 0, copied.stderr);
    } finally {
      await t.close();
    }
    const all = blocks(pageText());
    let ran = 0;
    for (const [i, block] of all.entries()) {
      if (block.lang !== 'sql' || block.heading === 'On PostgreSQL') continue;
      // Run on a log of 1,000,000 events by npm run bench:audit, not on this small copy.
      if (NOT_RUN.some(([pattern]) => pattern.test(block.text))) continue;
      const shown = all[i + 1]!;
      // On standard input: a block that starts with a comment ("-- …") is no option.
      const r = spawnSync('sqlite3', ['-readonly', '-header', '-column', scratch.path('copy/events.db')], {
        input: block.text,
        encoding: 'utf8',
        timeout: 60_000,
      });
      assert.is(r.status, 0, `line ${block.line}: ${r.stderr}`);
      assert.is(r.stderr, '', `line ${block.line}`);
      if (/\bapi_keys\b/.test(block.text)) assert.is(r.stdout, '', `line ${block.line}: a copy holds no keys`);
      else assert.fixture(tidy(r.stdout), tidy(shown.text), `line ${block.line}: what the query prints on the copy`);
      ran++;
    }
    assert.ok(ran >= 10, `${ran} queries ran`);
  } finally {
    scratch.cleanup();
  }
});

test.run();
