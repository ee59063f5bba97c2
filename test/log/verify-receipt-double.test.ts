// scripts/verify-receipt against a stand-in of the log's routes: a kept receipt of either
// version passes while the log extends it, and is BROKEN once the receipt or the log is
// tampered with, the log forked, the checkpoint signed by a key not pinned, or signed
// after the key log says its key was retired. The
// parser of a kept receipt takes the contract's form (the test vectors' checkpoint
// and path) and refuses near misses with a reason.
import { readFileSync, writeFileSync } from 'node:fs';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { parseLogReceipt } from '../../src/support/log-receipt.ts';
import { expectFailure, expectUsageError } from '../kit/cli.ts';
import { DOUBLE_KEY, newKey, startLogDouble, type LogDouble } from '../kit/log-double.ts';
import { tempDir } from '../kit/paths.ts';
import { runScript } from '../kit/scripts.ts';

const vectors = JSON.parse(readFileSync(new URL('./log-vectors.json', import.meta.url), 'utf8')) as {
  eventHashes: string[];
  checkpoint3: string;
  inclusionSeq2Size3: string[];
};

const parser = suite('a kept Log-Receipt');

parser('reads the contract form: the note whole, the path bottom up, proof=() for a tree of one', () => {
  const note = Buffer.from(vectors.checkpoint3).toString('base64');
  const proof = vectors.inclusionSeq2Size3.map((h) => `:${h}:`).join(' ');
  const header = `v=2, log="6f1c2d3e-8a9b-4c0d-9e1f-2a3b4c5d6e7f", seq=2, hash="${vectors.eventHashes[1]}", checkpoint=:${note}:, proof=(${proof})`;
  const r = parseLogReceipt(header);
  assert.ok(!(r instanceof Error) && r.version === 2, 'a version 2 receipt');
  assert.is(r.checkpoint, vectors.checkpoint3);
  assert.equal(
    r.proof.map((b) => b.toString('base64')),
    vectors.inclusionSeq2Size3,
  );
  const one = parseLogReceipt(`Log-Receipt: ${header.replace(/proof=\(.*\)$/, 'proof=()')}`);
  assert.ok(!(one instanceof Error) && one.version === 2 && one.proof.length === 0);
  for (const bad of [
    header.replace('v=2', 'v=3'),
    header.replace(/proof=\(.*\)$/, 'proof=(:AAAA:)'),
    header.replace('seq=2', 'seq=0'),
    header.replace(', proof', ' proof'),
  ])
    assert.instance(parseLogReceipt(bad), Error, bad.slice(-60));
});

parser.run();

interface Ctx {
  log: LogDouble;
}

const checker = suite<Ctx>('scripts/verify-receipt against a log it can be lied to by');

checker.before.each(async (ctx) => {
  ctx.log = await startLogDouble();
});

checker.after.each(async (ctx) => {
  await ctx.log.close();
});

const check = (ctx: Ctx, receipt: string | undefined, extra: string[] = []) =>
  runScript('verify-receipt', ['--url', ctx.log.url, ...extra, ...(receipt === undefined ? [] : [receipt])], {
    env: { INVENTORY_KEY: DOUBLE_KEY },
  });

checker("a receipt of either version holds while the log extends it; unpinned keys are said to be the service's own", async (ctx) => {
  ctx.log.append(1);
  const first = ctx.log.receipt(1);
  assert.match(first, /proof=\(\)$/);
  ctx.log.append(40);
  const v2 = ctx.log.receipt(17, 29);
  const v1 = ctx.log.receiptV1(33);
  const pin = ['--trust', ctx.log.key.verifierKey];
  const r = await check(ctx, v2, pin);
  assert.is(r.status, 0, r.stderr);
  assert.match(
    r.stderr,
    /^ok: version 2 receipt of seq 17: its checkpoint \(29 events\) .* the newest checkpoint \(41 events\) extends it\n$/,
  );
  assert.is((await check(ctx, first, pin)).status, 0, 'a tree of one');
  const old = await check(ctx, v1, pin);
  assert.is(old.status, 0, old.stderr);
  assert.match(old.stderr, /version 1 receipt of seq 33: signed by trusted key/);
  const stdin = await runScript('verify-receipt', ['--url', ctx.log.url], {
    env: { INVENTORY_KEY: DOUBLE_KEY },
    input: `Log-Receipt: ${v2}\n`,
  });
  assert.is(stdin.status, 0, stdin.stderr);
  assert.match(stdin.stderr, /^keys: the 1 the service lists, not pinned ones/);
  const dir = tempDir('inv-receipt-');
  try {
    writeFileSync(dir.path('keys'), `${ctx.log.key.verifierKey}\n`);
    assert.is((await check(ctx, v2, ['--keys', dir.path('keys')])).status, 0);
  } finally {
    dir.cleanup();
  }
});

checker('a tampered receipt, a forked log, a tampered proof, a key not pinned and a retired key are BROKEN', async (ctx) => {
  ctx.log.append(30);
  const v2 = ctx.log.receipt(11, 20);
  const v1 = ctx.log.receiptV1(5);
  const original = [...ctx.log.events];
  const pin = ['--trust', ctx.log.key.verifierKey];
  const otherHash = 'cd'.repeat(32);
  const cases: [string, string, () => void, RegExp][] = [
    ['another hash', v2.replace(/hash="[0-9a-f]+"/, `hash="${otherHash}"`), () => {}, /does not lead to the root/],
    ['another seq', v2.replace('seq=11', 'seq=12'), () => {}, /does not lead to the root/],
    ['a path hash changed', v2.replace(/proof=\(:(.)/, (_m, c: string) => `proof=(:${c === 'A' ? 'B' : 'A'}`), () => {}, /does not lead/],
    [
      'restored at 15, other writes on top',
      v2,
      () => {
        ctx.log.events = original.slice(0, 15);
        ctx.log.append(20, 'restored');
      },
      /does not extend the checkpoint of 20: the log was rewritten/,
    ],
    ['a consistency proof with a byte flipped', v2, () => (ctx.log.tamper.consistency = true), /does not extend/],
    [
      'a version 1 receipt of a rewritten event',
      v1,
      () => (ctx.log.events = [...original.slice(0, 4), otherHash, ...original.slice(5)]),
      /no longer holds the event/,
    ],
    ['a version 1 receipt, its hash changed', v1.replace(/hash="[0-9a-f]+"/, `hash="${otherHash}"`), () => {}, /signature does not verify/],
    // The checkpoints are dated 12:00; the key log says their key was retired an hour before.
    [
      'its checkpoint signed after its key was retired',
      v2,
      () => (ctx.log.retiredAt = '2026-11-27T11:00:00.000Z'),
      /its checkpoint: it is dated .*, after its key [0-9a-f]{16} was retired/,
    ],
    [
      'the newest checkpoint signed after its key was retired (a version 1 receipt)',
      v1,
      () => (ctx.log.retiredAt = '2026-11-27T11:00:00.000Z'),
      /the newest checkpoint: it is dated .*, after its key [0-9a-f]{16} was retired/,
    ],
  ];
  for (const [what, receipt, change, broken] of cases) {
    ctx.log.events = [...original];
    ctx.log.tamper.consistency = false;
    ctx.log.retiredAt = null;
    change();
    const r = await check(ctx, receipt, pin);
    expectFailure(r, /^error: BROKEN: the receipt of seq \d+: /, what);
    assert.match(r.stderr, broken, what);
  }
  ctx.log.events = [...original];
  ctx.log.retiredAt = null;
  const other = newKey();
  const untrusted = await check(ctx, v2, ['--trust', other.verifierKey]);
  expectFailure(untrusted, /its checkpoint: it is signed by a key this check does not trust/, 'a key not pinned');
  ctx.log.signer = other;
  const resigned = await check(ctx, v2, pin);
  expectFailure(resigned, /the newest checkpoint: it is signed by a key this check does not trust/, 'the newest signed by another key');
});

checker('usage errors: no URL, no key, no receipt, a bad key', async (ctx) => {
  ctx.log.append(2);
  const receipt = ctx.log.receipt(1);
  expectUsageError(await runScript('verify-receipt', [receipt], { env: { INVENTORY_KEY: DOUBLE_KEY } }), /--url is required/, 'no url');
  expectUsageError(
    await runScript('verify-receipt', ['--url', ctx.log.url, receipt], { env: { INVENTORY_KEY: '' } }),
    /INVENTORY_KEY/,
    'no key',
  );
  expectUsageError(await check(ctx, 'log="x"'), /not a Log-Receipt/, 'no receipt');
  expectUsageError(await check(ctx, receipt, ['--trust', 'x+y+z']), /--trust|is no verifier key/, 'a bad key');
});

checker.run();
