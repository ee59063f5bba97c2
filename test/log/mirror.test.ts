// scripts/mirror on both stores: a copy of the service's log with the service's paths,
// served by a static server, from which a second copy is made; a second run fetches only
// what is new, rewrites no full tile and appends to events.db what a first copy holds; a copy with one event or one tile byte changed
// is refused (BROKEN) and nothing of that piece is kept.
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { RAW_NODE } from '../kit/cli.ts';
import { trackPets } from '../kit/fixtures.ts';
import { tempDir } from '../kit/paths.ts';
import { runScript } from '../kit/scripts.ts';
import { serveStatic } from '../kit/static-server.ts';
import { signedLogSuite, verifierKeyOf } from '../kit/tiles.ts';

const SIZE = 600;

const copies = signedLogSuite('scripts/mirror', SIZE);

/** The tables of a copy's events.db that its events make, row by row. */
function tablesOf(file: string): Record<string, unknown[]> {
  const db = new Database(file, { readonly: true });
  try {
    const tables: Record<string, unknown[]> = {};
    for (const [table, order] of [
      ['events', 'seq'],
      ['stock_adjustments', 'seq'],
      ['inventory', 'pet_id'],
      ['tree_nodes', 'level, idx'],
    ]) {
      tables[table!] = db.prepare(`SELECT * FROM ${table} ORDER BY ${order}`).all();
    }
    assert.is(tables.events!.length, 900);
    return tables;
  } finally {
    db.close();
  }
}

const mirror = (url: string, dir: string, key = '', trust: string[] = []) =>
  runScript('mirror', ['--url', url, ...trust.flatMap((k) => ['--trust', k]), dir], { env: { INVENTORY_KEY: key }, timeoutMs: 120_000 });

copies('copies the log with its paths; a copy of the copy is the same; a second run fetches only what is new', async ({ t }) => {
  const dir = tempDir('mirror-');
  try {
    const url = `http://127.0.0.1:${t.port}`;
    const vkey = await verifierKeyOf(t);
    const first = await mirror(url, dir.path('copy'), t.key, [vkey]);
    assert.is(first.status, 0, first.stderr);
    assert.match(first.stderr, /^ok: .* holds the log's 600 events \(600 new\); 10 tiles and bundles, \d+ bytes downloaded\n$/m);
    assert.is(readFileSync(dir.path('copy/v1/log/checkpoint'), 'utf8'), (await t.get('/v1/log/checkpoint')).text);
    assert.is(readFileSync(dir.path('copy/v1/log/signing-keys'), 'utf8'), (await t.get('/v1/log/signing-keys')).text);
    assert.is(readFileSync(dir.path('copy/checkpoint.keys'), 'utf8'), `${vkey}\n`);
    for (const path of ['tile/0/000', 'tile/0/002.p/88', 'tile/1/000.p/2', 'tile/entries/001', 'tile/events/002.p/88']) {
      const served = await fetch(`${url}/v1/log/${path}`, { headers: { Authorization: `Bearer ${t.key}`, 'Accept-Encoding': 'identity' } });
      assert.equal(readFileSync(dir.path(`copy/v1/log/${path}`)), Buffer.from(await served.arrayBuffer()), path);
    }
    const fullTile = dir.path('copy/v1/log/tile/0/001');
    const written = statSync(fullTile).mtimeMs;
    const eventsDb = statSync(dir.path('copy/events.db')).ino;

    // A copy of the copy, served by a static server, without a key.
    const served = await serveStatic(dir.path('copy'));
    try {
      const second = await mirror(served.url, dir.path('again'), '', [vkey]);
      assert.is(second.status, 0, second.stderr);
      assert.is(readFileSync(dir.path('again/v1/log/checkpoint'), 'utf8'), readFileSync(dir.path('copy/v1/log/checkpoint'), 'utf8'));

      await trackPets(
        t.store,
        Array.from({ length: 300 }, (_, i) => ({ petId: 1000 + i })),
      );
      const later = await mirror(url, dir.path('copy'), t.key);
      assert.is(later.status, 0, later.stderr);
      // 900 events: tiles 0/002 and 0/003.p/132, 1/000.p/3, and the bundles 002, 003.p/132 of both kinds.
      assert.match(later.stderr, /holds the log's 900 events \(300 new\); 7 tiles and bundles/);
      assert.is(statSync(fullTile).mtimeMs, written, 'a full tile is never written again');
      assert.is(statSync(dir.path('copy/events.db')).ino, eventsDb, 'events.db was appended to, not made again');
      const fresh = await mirror(url, dir.path('fresh'), t.key, [vkey]);
      assert.is(fresh.status, 0, fresh.stderr);
      assert.equal(tablesOf(dir.path('copy/events.db')), tablesOf(dir.path('fresh/events.db')), 'the same as a first copy of 900 events');
      const onCopy = await mirror(served.url, dir.path('again'));
      assert.is(onCopy.status, 0, onCopy.stderr);
      assert.match(onCopy.stderr, /holds the log's 900 events \(300 new\)/);
    } finally {
      await served.close();
    }
  } finally {
    dir.cleanup();
  }
});

/** The bytes with one bit of byte at changed. */
const flipped = (b: Buffer, at: number) => Buffer.concat([b.subarray(0, at), Buffer.from([b[at]! ^ 1]), b.subarray(at + 1)]);

copies('a copy with one event byte or one tile byte changed is refused, and nothing of that piece is kept', async ({ t }) => {
  const dir = tempDir('mirror-tamper-');
  try {
    const vkey = await verifierKeyOf(t);
    assert.is((await mirror(`http://127.0.0.1:${t.port}`, dir.path('copy'), t.key, [vkey])).status, 0);
    const served = await serveStatic(dir.path('copy'));
    try {
      for (const [what, file, change, refusal] of [
        [
          'an event',
          'v1/log/tile/events/001',
          (b) => Buffer.from(b.toString().replace('"quantity":300', '"quantity":301')),
          /tile\/events\/001: the event with seq 301: its hash is not its fields'/,
        ],
        ['a level-0 tile', 'v1/log/tile/0/001', (b) => flipped(b, 40), /tile\/0\/001 is not the tree's/],
        ['the edge tile', 'v1/log/tile/1/000.p/2', (b) => flipped(b, 0), /do not fold to the checkpoint's root/],
      ] satisfies [string, string, (b: Buffer) => Buffer, RegExp][]) {
        const original = readFileSync(dir.path(`copy/${file}`));
        writeFileSync(dir.path(`copy/${file}`), change(original));
        const r = await mirror(served.url, dir.path(`of-${what.replaceAll(' ', '-')}`), '', [vkey]);
        writeFileSync(dir.path(`copy/${file}`), original);
        assert.is(r.status, 1, `${what}: ${r.stderr}`);
        assert.match(r.stderr, /^error: BROKEN: /m);
        assert.match(r.stderr, refusal, what);
        const kept = dir.path(`of-${what.replaceAll(' ', '-')}/${file}`);
        assert.throws(() => statSync(kept), /ENOENT/, `${what}: the changed piece is not kept`);
        assert.throws(
          () => statSync(dir.path(`of-${what.replaceAll(' ', '-')}/v1/log/checkpoint`)),
          /ENOENT/,
          `${what}: no checkpoint kept`,
        );
      }
    } finally {
      await served.close();
    }
  } finally {
    dir.cleanup();
  }
});

copies.run();

const usage = suite('scripts/mirror: usage');

usage('--help says how it is called; a wrong call is one line and exit 2; a log it cannot read is exit 1', async () => {
  const help = await runScript('mirror', ['--help']);
  assert.is(help.status, 0, help.stderr);
  assert.match(help.stdout, /^Usage: scripts\/mirror --url URL \[--trust VKEY\]\.\.\. DIR/);
  for (const [args, message] of [
    [['--url', 'http://127.0.0.1:1'], /give one DIR/],
    [['--url', 'ftp://x', 'dir'], /--url must be an http/],
    [['dir'], /--url must be an http/],
    [['--url', 'http://127.0.0.1:1', '--trust', 'nope', 'dir'], /--trust/],
    [['--url', 'http://127.0.0.1:1', '--bogus', 'dir'], /bogus/],
  ] as const) {
    const r = await runScript('mirror', [...args]);
    assert.is(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, /^error: [^\n]+\nsee --help\n$/, args.join(' '));
    assert.match(r.stderr, message);
  }
  const dir = tempDir('mirror-usage-');
  try {
    const unreachable = await runScript('mirror', ['--url', 'http://127.0.0.1:1', dir.path('copy')]);
    assert.is(unreachable.status, 1, unreachable.stderr);
    assert.match(unreachable.stderr, /^error: [^\n]+\n$/);
    assert.not.match(unreachable.stderr, RAW_NODE);
  } finally {
    dir.cleanup();
  }
});

usage.run();
