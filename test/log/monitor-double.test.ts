// The monitor (scripts/verify-log --url URL --checkpoint FILE) against a stand-in of the
// log's routes that a test can fork, cut, tamper with or re-sign at will: a later run
// passes only when the newest checkpoint is signed by a pinned key and extends the kept
// one, keeps it byte for byte, and downloads a few KB; everything else is BROKEN, and a
// FILE that is no checkpoint is an error. The first run's pinning is driven through the
// module, its whole-log check given (the real one needs the real service).
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { monitor } from '../../src/application/verify/monitor.ts';
import { serviceGetter } from '../../src/application/verify/checkpoint-checks.ts';
import { expectFailure, expectUsageError, RAW_NODE } from '../kit/cli.ts';
import { DOUBLE_KEY, endorsement, newKey, startLogDouble, type LogDouble } from '../kit/log-double.ts';
import { tempDir, type TempDir } from '../kit/paths.ts';
import { runScript } from '../kit/scripts.ts';

interface Ctx {
  log: LogDouble;
  dir: TempDir;
  file: string;
}

const test = suite<Ctx>('the monitor against a log it can be lied to by');

test.before.each(async (ctx) => {
  ctx.log = await startLogDouble();
  ctx.dir = tempDir('inv-monitor-');
  ctx.file = ctx.dir.path('checkpoint');
});

test.after.each(async (ctx) => {
  await ctx.log.close();
  ctx.dir.cleanup();
});

/** FILE and FILE.keys as a passing earlier run left them. */
function keep(ctx: Ctx, note: string, keys = [ctx.log.key.verifierKey]) {
  writeFileSync(ctx.file, note);
  writeFileSync(`${ctx.file}.keys`, keys.map((k) => `${k}\n`).join(''));
}

const monitorRun = (ctx: Ctx, extra: string[] = []) =>
  runScript('verify-log', ['--url', ctx.log.url, '--checkpoint', ctx.file, ...extra], { env: { INVENTORY_KEY: DOUBLE_KEY } });

test('a later run checks the consistency proof from the kept checkpoint, keeps the new one as served, and downloads a few KB', async (ctx) => {
  ctx.log.append(1000);
  keep(ctx, ctx.log.checkpoint(377));
  const r = await monitorRun(ctx);
  assert.is(r.status, 0, r.stderr);
  assert.match(r.stderr, /ok: the newest checkpoint \(1000 events\) is signed by a trusted key and extends the kept one \(377 events\)/);
  assert.is(readFileSync(ctx.file, 'utf8'), ctx.log.checkpoint(), 'FILE holds the checkpoint exactly as served');
  const bytes = Number(/; (\d+) bytes of checkpoints and proofs downloaded/.exec(r.stderr)?.[1]);
  assert.ok(bytes > 0 && bytes < 8192, `downloaded ${bytes} bytes`);
  assert.ok(ctx.log.served() < 8192, `the double served ${ctx.log.served()} bytes`);
  // Nothing new: the same size needs no proof, the roots are compared.
  const again = await monitorRun(ctx);
  assert.is(again.status, 0, again.stderr);
});

test('a kept checkpoint of size 0 needs no proof', async (ctx) => {
  keep(ctx, ctx.log.checkpoint(0));
  ctx.log.append(5);
  const r = await monitorRun(ctx);
  assert.is(r.status, 0, r.stderr);
  assert.is(readFileSync(ctx.file, 'utf8'), ctx.log.checkpoint());
});

test('a forked log (a restored copy with other writes on top), a cut log and a tampered proof are BROKEN; FILE stays', async (ctx) => {
  ctx.log.append(20);
  const kept = ctx.log.checkpoint();
  const cases: [string, () => void, RegExp][] = [
    [
      'restored at 12, other writes on top',
      () => {
        ctx.log.events = ctx.log.events.slice(0, 12);
        ctx.log.append(30, 'restored');
      },
      /does not extend the checkpoint of 20: the log was rewritten/,
    ],
    ['cut to 15', () => (ctx.log.events = ctx.log.events.slice(0, 15)), /holds 15 events, fewer than the 20 of a checkpoint it signed/],
    [
      'the same size, one event changed',
      () => (ctx.log.events = [...ctx.log.events.slice(0, 19), 'ff'.repeat(32)]),
      /disagree on the root/,
    ],
    ['a consistency proof with a byte flipped', () => (ctx.log.append(7), (ctx.log.tamper.consistency = true)), /does not extend/],
  ];
  const original = [...ctx.log.events];
  for (const [what, change, broken] of cases) {
    ctx.log.events = [...original];
    ctx.log.tamper.consistency = false;
    keep(ctx, kept);
    change();
    const r = await monitorRun(ctx);
    expectFailure(r, /^error: BROKEN: /, what);
    assert.match(r.stderr, broken, what);
    assert.is(readFileSync(ctx.file, 'utf8'), kept, `${what}: FILE still holds the kept checkpoint`);
  }
});

test('a checkpoint no pinned key signed is BROKEN, whatever the log lists; --trust adds a key to FILE.keys', async (ctx) => {
  ctx.log.append(4);
  keep(ctx, ctx.log.checkpoint());
  ctx.log.append(2);
  const other = newKey();
  ctx.log.signer = other;
  const r = await monitorRun(ctx);
  expectFailure(r, /^error: BROKEN: the newest checkpoint: it is signed by a key this monitor does not trust$/m, 'another key');
  const pinned = await monitorRun(ctx, ['--trust', other.verifierKey]);
  assert.is(pinned.status, 0, pinned.stderr);
  assert.is(readFileSync(`${ctx.file}.keys`, 'utf8'), `${ctx.log.key.verifierKey}\n${other.verifierKey}\n`);
});

test('a FILE that is no checkpoint is an error, never a pass; bad arguments are usage errors', async (ctx) => {
  ctx.log.append(3);
  for (const [what, text] of [
    ['empty', ''],
    ['a digest', '3:abcd\n'],
    ['a checkpoint cut short', ctx.log.checkpoint().split('\n\n')[0]!],
  ] as const) {
    keep(ctx, text);
    const r = await monitorRun(ctx);
    expectFailure(r, new RegExp(`^error: ${ctx.file}: the kept checkpoint: it is no (signed note|checkpoint)`), what);
    assert.not.match(r.stderr, /BROKEN|ok:/, what);
    assert.not.match(r.stderr, RAW_NODE, what);
  }
  const usage: [string[], RegExp][] = [
    [['--checkpoint', ctx.file], /--checkpoint needs --url/],
    [['--url', ctx.log.url, '--checkpoint', ctx.file, '--trust', 'nokey'], /--trust: "nokey" is no verifier key/],
    [['--url', ctx.log.url, '--checkpoint', ctx.file, '--digest', `1:${'a'.repeat(64)}`], /neither --db nor digests/],
    [['--url', ctx.log.url, '--trust', ctx.log.key.verifierKey], /--trust pins keys for --checkpoint/],
  ];
  for (const [args, message] of usage) {
    const r = await runScript('verify-log', args, { env: { INVENTORY_KEY: DOUBLE_KEY } });
    expectUsageError(r, message, args.join(' '));
  }
});

test('a first run pins the log`s key and prints it, or only the keys given with --trust', async (ctx) => {
  ctx.log.append(9);
  const head = { seq: 9, hash: ctx.log.events[8]! };
  const get = serviceGetter(ctx.log.url, DOUBLE_KEY).get;
  const wholeLog = () => Promise.resolve({ ok: true as const, events: 9, head });
  const listed = await monitor({ get, trust: [], wholeLog });
  assert.ok(listed.ok);
  assert.equal(listed.keys, [ctx.log.key.verifierKey]);
  assert.ok(listed.report.includes(`  ${ctx.log.key.verifierKey}`), listed.report.join('\n'));
  assert.is(listed.checkpoint.note, ctx.log.checkpoint());
  const other = newKey();
  const pinnedOther = await monitor({ get, trust: [other.verifierKey], wholeLog });
  assert.equal(pinnedOther.ok ? 'passed' : pinnedOther.reason, 'the newest checkpoint: it is signed by a key this monitor does not trust');
  // The log's own key, pinned by no one here, is said to be untrusted.
  assert.equal(pinnedOther.report, [
    `UNTRUSTED: key ${ctx.log.key.keyId} is listed by the log but not trusted: it has no endorsement (added --unendorsed, or not by the operator's tools); a checkpoint it signs is BROKEN for this monitor until its verifier key, confirmed out of band, is pinned with --trust: ${ctx.log.key.verifierKey}`,
    'ok: 9 events through the API, chain intact, signed head at seq 9 valid',
  ]);
  // The signed head must be in the checkpoint's tree.
  const elsewhere = await monitor({
    get,
    trust: [],
    wholeLog: () => Promise.resolve({ ok: true as const, events: 9, head: { seq: 9, hash: 'ab'.repeat(32) } }),
  });
  assert.ok(!elsewhere.ok && /the signed head is not in the newest checkpoint's tree/.test(elsewhere.reason));
  assert.not.ok(existsSync(ctx.file), 'the module writes no file');
});

test('a first run pins the first key and the keys endorsed from it; an unendorsed or forged key is UNTRUSTED, never pinned', async (ctx) => {
  ctx.log.append(9);
  const head = { seq: 9, hash: ctx.log.events[8]! };
  const get = serviceGetter(ctx.log.url, DOUBLE_KEY).get;
  const wholeLog = () => Promise.resolve({ ok: true as const, events: 9, head });
  const [endorsed, further, unendorsed, forged, stranger] = [newKey(), newKey(), newKey(), newKey(), newKey()];
  ctx.log.moreKeys = [
    { key: endorsed, endorsedBy: endorsement(ctx.log.key, endorsed) },
    // Endorsed by a key that is itself trusted only through its endorsement: a chain.
    { key: further, endorsedBy: endorsement(endorsed, further) },
    { key: unendorsed, endorsedBy: null },
    // Signed by a key that is no trusted one, and by itself.
    { key: forged, endorsedBy: endorsement(stranger, forged) },
    { key: stranger, endorsedBy: endorsement(stranger, stranger) },
  ];
  const first = await monitor({ get, trust: [], wholeLog });
  assert.ok(first.ok, JSON.stringify(first));
  assert.equal(first.keys, [ctx.log.key.verifierKey, endorsed.verifierKey, further.verifierKey]);
  for (const key of [endorsed, further]) assert.ok(first.report.includes(`  ${key.verifierKey}`), `${key.keyId} printed`);
  const untrusted = first.report.filter((line) => line.startsWith('UNTRUSTED: '));
  assert.equal(
    untrusted.map((line) => /^UNTRUSTED: key ([0-9a-f]{16}) /.exec(line)?.[1]),
    [unendorsed.keyId, forged.keyId, stranger.keyId],
  );
  assert.match(untrusted[0]!, /it has no endorsement \(added --unendorsed/);
  assert.match(untrusted[1]!, /its endorsement is signed by no trusted key/);
  // A checkpoint the forged key signs is not trusted, whatever the log lists.
  ctx.log.signer = forged;
  const fooled = await monitor({ get, trust: [], wholeLog });
  assert.equal(fooled.ok ? 'passed' : fooled.reason, 'the newest checkpoint: it is signed by a key this monitor does not trust');
  // Signed by a key endorsed from the first: trusted.
  ctx.log.signer = further;
  assert.ok((await monitor({ get, trust: [], wholeLog })).ok);
});

test.run();
