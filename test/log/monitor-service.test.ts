// The monitor (scripts/verify-log --checkpoint), scripts/verify-receipt and the guide's
// Go and Python verifiers against the running service, on both stores: a first run reads
// the whole log and pins the listed key, later runs and a PATCH's receipt pass; a copy of
// the log restored from before the newest writes, with other writes on top, is BROKEN for
// each of them (the kept checkpoint and the receipt are no longer extended), and so is a
// checkpoint no pinned key signed.
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import * as assert from 'uvu/assert';
import type { TestApp } from '../kit/app.ts';
import { newKey } from '../kit/log-double.ts';
import { tempDir } from '../kit/paths.ts';
import { runScript } from '../kit/scripts.ts';
import { restoredCopy } from '../kit/restored-copy.ts';
import { targetSuites } from '../kit/suites.ts';

const KEY = { pem: generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }) as string };

const test = targetSuites('the monitor and the receipt checker against the service');

const url = (t: TestApp) => `http://127.0.0.1:${t.port}`;

test('a kept checkpoint and a receipt pass while the log grows, and are BROKEN on a restored copy with other writes on top', async ({
  target,
}) => {
  const dir = tempDir('inv-monitor-service-');
  const logs = await restoredCopy(target, KEY);
  try {
    const a = await logs.original();
    const file = dir.path('checkpoint');
    const monitor = (t: TestApp, extra: string[] = []) =>
      runScript('verify-log', ['--url', url(t), '--checkpoint', file, ...extra], { env: { INVENTORY_KEY: t.key } });

    const first = await monitor(a);
    assert.is(first.status, 0, first.stderr);
    const listed = JSON.parse((await a.get('/v1/log/signing-keys')).text) as { verifierKey: string }[];
    assert.is(readFileSync(`${file}.keys`, 'utf8'), `${listed[0]!.verifierKey}\n`);
    assert.ok(first.stderr.includes(`\n  ${listed[0]!.verifierKey}\n`), `the pinned key is printed:\n${first.stderr}`);
    assert.is(readFileSync(file, 'utf8'), (await a.get('/v1/log/checkpoint')).text, 'FILE holds the checkpoint as served');
    // The first run's count holds the whole log it read, not only the checkpoint.
    const read = Number(/; (\d+) bytes downloaded \(the whole log, once, then checkpoints and proofs\)\n/.exec(first.stderr)?.[1]);
    const events = Buffer.byteLength((await a.get('/v1/events?after=0&limit=1000')).text);
    const checkpoint = Buffer.byteLength(readFileSync(file));
    assert.ok(read > events + checkpoint, `${read} bytes reported, where the events alone are ${events}:\n${first.stderr}`);

    const patched = await a.patch(2, { quantity: 7 });
    assert.is(patched.status, 200, patched.text);
    const receipt = patched.headers['log-receipt'] as string;
    assert.match(receipt, /^v=2, log="[0-9a-f-]{36}", seq=6, /);
    for (let i = 0; i < 4; i++) assert.is((await a.patch(3, { quantity: 10 + i })).status, 200);
    const later = await monitor(a);
    assert.is(later.status, 0, later.stderr);
    assert.match(later.stderr, /extends the kept one \(5 events\)/);
    const bytes = Number(/; (\d+) bytes of checkpoints and proofs downloaded/.exec(later.stderr)?.[1]);
    assert.ok(bytes > 0 && bytes < 8192, `a later run downloads a few KB: ${bytes}`);
    const checked = await runScript('verify-receipt', ['--url', url(a), '--keys', `${file}.keys`, receipt], {
      env: { INVENTORY_KEY: a.key },
    });
    assert.is(checked.status, 0, checked.stderr);
    assert.match(checked.stderr, /the newest checkpoint \(10 events\) extends it/);
    const kept = readFileSync(file, 'utf8');

    // The copy made before the PATCHes, served again under the same key, with other writes on top.
    const b = await logs.restored();
    for (let i = 0; i < 8; i++) assert.is((await b.patch(4, { quantity: 20 + i })).status, 200);
    const forked = await monitor(b);
    assert.is(forked.status, 1, forked.stderr);
    assert.match(forked.stderr, /^error: BROKEN: the tree of 13 events does not extend the checkpoint of 10: the log was rewritten$/m);
    assert.is(readFileSync(file, 'utf8'), kept, 'FILE keeps the checkpoint the fork does not extend');
    const gone = await runScript('verify-receipt', ['--url', url(b), '--keys', `${file}.keys`, receipt], { env: { INVENTORY_KEY: b.key } });
    assert.is(gone.status, 1, gone.stderr);
    assert.match(gone.stderr, /^error: BROKEN: the receipt of seq 6: the tree of 13 events does not extend the checkpoint of 6/);

    // A monitor that pinned another key trusts none of the service's checkpoints.
    const elsewhere = dir.path('elsewhere');
    const untrusted = await runScript('verify-log', ['--url', url(b), '--checkpoint', elsewhere, '--trust', newKey().verifierKey], {
      env: { INVENTORY_KEY: b.key },
    });
    assert.is(untrusted.status, 1, untrusted.stderr);
    assert.match(untrusted.stderr, /^error: BROKEN: the newest checkpoint: it is signed by a key this monitor does not trust$/m);
    assert.not.ok(existsSync(elsewhere), 'nothing is kept from a run that failed');
  } finally {
    await logs.cleanup();
    dir.cleanup();
  }
});

test.run();
