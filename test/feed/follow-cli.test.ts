// scripts/follow: the log as it grows, from the database, on every store: what was there,
// then what other processes commit, each event once, in seq order; jsonl is the feed's own
// event object; Ctrl-C or SIGTERM ends it with 0.
import { spawn } from 'node:child_process';
import * as assert from 'uvu/assert';
import { eventHash } from '../../src/store/hash-chain.ts';
import { commandsOn, createKey, eventsOf, trackPets } from '../kit/fixtures.ts';
import { readLines, type LineReader } from '../kit/lines.ts';
import { root, scriptPath } from '../kit/paths.ts';
import { runScript } from '../kit/scripts.ts';
import { targetSuites } from '../kit/suites.ts';

const BIG = 9223372036854775807n;

const follow = targetSuites<{ db: string; cleanup: () => Promise<void> }>('scripts/follow', {
  async beforeEach(ctx) {
    const fresh = await ctx.target.fresh();
    ctx.db = fresh.db;
    ctx.cleanup = fresh.cleanup;
    const store = await ctx.target.open(ctx.db);
    try {
      await createKey(store);
      await trackPets(store, [{ petId: 1 }, { petId: 2 }, { petId: BIG, quantity: 4 }]);
    } finally {
      await store.close();
    }
  },
  async afterEach(ctx) {
    await ctx.cleanup();
  },
});

function start(args: string[]): LineReader {
  const env = { ...process.env };
  delete env.INVENTORY_DB;
  return readLines(spawn(scriptPath('follow'), args, { cwd: root, env }));
}

follow('jsonl: every event after --after, then what another process commits, within a second, once each', async ({ target, db }) => {
  const f = start(['--after', '1', '--format', 'jsonl', '--db', db]);
  await f.waitFor(2);
  const store = await target.open(db);
  try {
    const commands = commandsOn(store);
    for (let i = 0; i < 5; i++) {
      const sent = performance.now();
      await commands.handle({ type: 'SetQuantity', petId: BIG, quantity: i }, { actor: 'shop', requestId: `r${i}` });
      await f.waitFor(3 + i);
      assert.ok(performance.now() - sent < 1500, 'within about a second');
    }
    const table = await eventsOf(store);
    assert.equal(
      f.lines.map((line) => /^\{"seq":(\d+),/.exec(line)?.[1]),
      table.slice(1).map((e) => String(e.seq)),
    );
    assert.ok(f.lines[1]!.includes(`"petId":${BIG},`), 'int64 ids exact');
    // Each line carries what its hash covers.
    const parsed = JSON.parse(f.lines[2]!.replace(/"(seq|petId)":(\d+)/g, '"$1":"$2"')) as {
      seq: string;
      petId: string;
      version: number;
      type: string;
      data: object;
      actor: string;
      requestId: string;
      recordedAt: string;
      prevHash: string;
      hash: string;
    };
    const hash = eventHash({ ...parsed, seq: BigInt(parsed.seq), petId: BigInt(parsed.petId), data: JSON.stringify(parsed.data) });
    assert.is(hash, parsed.hash);
  } finally {
    await store.close();
  }
  f.proc.kill('SIGTERM');
  assert.is(await f.exited, 0, f.err());
});

follow('text: one line per event; usage errors exit 2', async ({ db }) => {
  const f = start(['--db', db]);
  await f.waitFor(3);
  assert.match(
    f.lines[0]!,
    /^1 {2}\S+Z {2}PetTracked {2}pet 1 {2}\{"quantity":0,"status":"available","schemaVersion":1\} {2}cli:test {2}seed$/,
  );
  f.proc.kill('SIGINT');
  assert.is(await f.exited, 0);
  for (const args of [['--after', '-1'], ['--after', 'x'], ['--format', 'csv'], ['extra']]) {
    const r = await runScript('follow', args, { db });
    assert.is(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, /^error: .*\nsee --help\n$/);
  }
});

follow('--after takes the digest SEQ:HASH; one past the head or not in this log fails, naming the head', async ({ target, db }) => {
  const store = await target.open(db);
  const table = await eventsOf(store);
  await store.close();
  const [first, , head] = table;
  const f = start(['--after', `${first!.seq}:${first!.hash}`, '--format', 'jsonl', '--db', db]);
  await f.waitFor(2);
  assert.equal(
    f.lines.map((line) => /^\{"seq":(\d+),/.exec(line)?.[1]),
    table.slice(1).map((e) => String(e.seq)),
  );
  f.proc.kill('SIGTERM');
  assert.is(await f.exited, 0, f.err());
  for (const [after, words] of [
    [`${first!.seq}:${'f'.repeat(64)}`, 'is not in this log'],
    [`${head!.seq + 1n}`, 'is past the newest event'],
  ] as const) {
    const r = await runScript('follow', ['--after', after], { db });
    assert.is(r.status, 1, `${after}: ${r.stderr}`);
    assert.ok(r.stderr.includes(words) && r.stderr.includes(`${head!.seq}:${head!.hash}`), r.stderr);
    assert.is(r.stdout, '');
  }
});

follow.run();
