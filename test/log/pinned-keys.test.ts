// Keys an auditor pins, against the service on both stores: a rotation done with
// scripts/keys endorse-signing then retire-signing passes a monitor that kept its keys
// (the new key is trusted through its endorsement), and so does a receipt of either key
// checked with verify-receipt and the first key pinned; the retired key's instance stops
// signing (503, /readyz says why) and refuses to start, and a head it signs afterwards is
// BROKEN for verify-log; the auditor's rewrite (the key log rewritten with a key of the
// operator's, back-dated, the history re-signed) is BROKEN for that monitor. A key added
// unendorsed is said loudly, and stays untrusted (by the monitor, a first run of it too,
// and by verify-receipt) until pinned.
import { readFileSync, writeFileSync } from 'node:fs';
import * as assert from 'uvu/assert';
import { startApp, type TestApp } from '../kit/app.ts';
import { tempDir } from '../kit/paths.ts';
import { runScript } from '../kit/scripts.ts';
import { execute, query } from '../kit/sql.ts';
import { openStore } from '../kit/stores.ts';
import { targetSuites } from '../kit/suites.ts';
import { endorse, keysWithFiles, newSigningKey } from '../kit/signing-keys.ts';
import { headMessage, makeSigner, type HeadFields } from '../../src/support/signing.ts';
import { KEY_TIME_MARGIN_MS } from '../../src/application/signing/trust.ts';

const test = targetSuites('keys an auditor pins');

const url = (t: TestApp) => `http://127.0.0.1:${t.port}`;

interface Listed {
  keyId: string;
  verifierKey: string;
  addedAt: string;
  retiredAt: string | null;
  endorsedBy: string | null;
}
const listed = async (t: TestApp) => JSON.parse((await t.get('/v1/log/signing-keys')).text) as Listed[];

/** Polls until the PATCH answers other than 200, within a bound far above the revocation bound. */
async function refusedWithin(t: TestApp, ms: number) {
  const until = Date.now() + ms;
  for (let i = 0; ; i++) {
    const res = await t.patch(1, { quantity: 100 + i });
    if (res.status !== 200 || Date.now() > until) return res;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

test('a rotation (endorse-signing, restart, retire-signing) passes the monitor; the old key stops signing and is refused', async ({
  target,
}) => {
  const dir = tempDir('inv-pinned-keys-');
  const [K1, K2] = [newSigningKey(), newSigningKey()];
  const apps: TestApp[] = [];
  try {
    const a = await startApp({ target, signingKey: K1, realClock: true });
    apps.push(a);
    for (let pet = 1; pet <= 3; pet++) await a.track(pet, 1);
    const [first] = await listed(a);
    const receiptOf = async (t: TestApp, quantity: number) => {
      const res = await t.patch(3, { quantity });
      assert.is(res.status, 200, res.text);
      return String(res.headers['log-receipt']);
    };
    const beforeRotation = await receiptOf(a, 7);
    const file = dir.path('checkpoint');
    const monitor = (t: TestApp) => runScript('verify-log', ['--url', url(t), '--checkpoint', file], { env: { INVENTORY_KEY: t.key } });
    const pinned = await runScript('verify-log', ['--url', url(a), '--checkpoint', file, '--trust', first!.verifierKey], {
      env: { INVENTORY_KEY: a.key },
    });
    assert.is(pinned.status, 0, pinned.stderr);

    const endorsed = await endorse(a.db, K1, K2);
    const k2 = makeSigner(K2).keyId;
    assert.match(endorsed.stderr, new RegExp(`signing key ${k2} added to .*, endorsed by key ${first!.keyId}`));
    const b = await startApp({
      target,
      signingKey: K2,
      realClock: true,
      keyName: 'second',
      open: (_f, now) => openStore(a.db, { now, signingKey: K2 }),
    });
    apps.push(b);
    assert.is((await b.patch(2, { quantity: 5 })).status, 200);
    const afterRotation = await receiptOf(b, 8);
    const retired = await runScript('keys', ['retire-signing', first!.keyId, '--db', a.db]);
    assert.is(retired.status, 0, retired.stderr);
    assert.match(retired.stderr, new RegExp(`signing key ${first!.keyId} retired in `));

    // The old key's instance stops signing within the revocation bound, and says why.
    const refused = await refusedWithin(a, 5_000);
    assert.is(refused.status, 503, refused.text);
    assert.is(refused.json<{ code: string }>().code, 'unavailable');
    const ready = await a.request({ path: '/readyz' });
    assert.is(ready.status, 503);
    assert.ok(ready.text.includes(`the signing key ${first!.keyId} was retired at`), ready.text);
    assert.is((await b.patch(2, { quantity: 6 })).status, 200, 'the new key signs on');
    // Nor does it sign a head or a checkpoint any more.
    for (const path of ['/v1/log/head', '/v1/log/checkpoint']) {
      const unsigned = await a.get(path);
      assert.is(unsigned.status, 503, `${path}: ${unsigned.text}`);
      assert.ok(unsigned.text.includes(`the signing key ${first!.keyId} was retired at`), unsigned.text);
    }
    assert.is((await b.get('/v1/log/checkpoint')).status, 200);

    const keys = await listed(b);
    assert.equal(
      keys.map((k) => [k.keyId, k.retiredAt === null, k.endorsedBy === null]),
      [
        [first!.keyId, false, true],
        [k2, true, false],
      ],
    );
    const rotated = await monitor(b);
    assert.is(rotated.status, 0, rotated.stderr);
    assert.ok(rotated.stderr.includes(`trusting key ${k2}: endorsed by ${first!.verifierKey}`), rotated.stderr);
    assert.is(readFileSync(`${file}.keys`, 'utf8'), `${first!.verifierKey}\n${keys[1]!.verifierKey}\n`);
    // A receipt of either key holds for an auditor who pinned only the first: the second
    // is trusted through its endorsement, and the newest checkpoint it signed extends both.
    for (const [receipt, signedBy] of [
      [beforeRotation, first!.verifierKey],
      [afterRotation, keys[1]!.verifierKey],
    ] as const) {
      // The key hash in the verifier key (name+hash+key) opens the checkpoint's signature.
      const note = Buffer.from(/checkpoint=:([^:]+):/.exec(receipt)![1]!, 'base64').toString('utf8');
      const signature = /\n— \S+ (\S+)\n$/.exec(note)![1]!;
      assert.is(Buffer.from(signature, 'base64').subarray(0, 4).toString('hex'), signedBy.split('+')[1], 'signed by the key named');
      const checked = await runScript('verify-receipt', ['--url', url(b), '--trust', first!.verifierKey, receipt], {
        env: { INVENTORY_KEY: b.key },
      });
      assert.is(checked.status, 0, `a receipt signed by ${signedBy}: ${checked.stderr}`);
      assert.ok(checked.stderr.includes(`trusting key ${k2}: endorsed by ${first!.verifierKey}`), checked.stderr);
      assert.match(checked.stderr, /^ok: version 2 receipt of seq \d+: its checkpoint .* is signed by a trusted key/m);
    }

    // The retired key: refused at start, and a head it signed after its retirement is BROKEN.
    const again = await openStore(a.db, { signingKey: K1 }).then(
      async (s) => (await s.close(), 'opened'),
      (error: Error) => error.message,
    );
    assert.match(again, /was retired at .*: start with a new key endorsed with scripts\/keys endorse-signing/);
    // The instance no longer signs one: the old key file signs it, as whoever kept it could,
    // dated at the edge of the clock margin past the retirement and a millisecond beyond.
    const head = JSON.parse((await b.get('/v1/log/head')).text) as HeadFields & { signature: { keyId: string; value: string } };
    const oldSigner = makeSigner(K1);
    const judgedAt = async (msAfterRetirement: number) => {
      const fields = { ...head, time: new Date(Date.parse(keys[0]!.retiredAt!) + msAfterRetirement).toISOString() };
      const signed = { ...fields, signature: { keyId: oldSigner.keyId, value: oldSigner.sign(headMessage(fields)).toString('base64url') } };
      const file = dir.path(`head-${msAfterRetirement}`);
      writeFileSync(file, JSON.stringify(signed));
      return runScript('verify-log', ['--digests', file, '--db', a.db], { env: {} });
    };
    const atMargin = await judgedAt(KEY_TIME_MARGIN_MS);
    assert.is(atMargin.status, 0, atMargin.stderr);
    const judged = await judgedAt(KEY_TIME_MARGIN_MS + 1);
    assert.is(judged.status, 1, judged.stderr);
    assert.match(judged.stderr, new RegExp(`after its key ${first!.keyId} was retired`));
  } finally {
    for (const app of apps) await app.close();
    dir.cleanup();
  }
});

test('the auditor`s rewrite (a key of the operator`s, back-dated, the history re-signed) is BROKEN for a monitor that kept its keys', async ({
  target,
}) => {
  const dir = tempDir('inv-pinned-rewrite-');
  const apps: TestApp[] = [];
  try {
    const a = await startApp({ target, signingKey: newSigningKey() });
    apps.push(a);
    for (let pet = 1; pet <= 3; pet++) await a.track(pet, 1);
    const file = dir.path('checkpoint');
    const kept = await runScript('verify-log', ['--url', url(a), '--checkpoint', file], { env: { INVENTORY_KEY: a.key } });
    assert.is(kept.status, 0, kept.stderr);
    const [identity] = await query<{ logId: string }>({ target, db: a.db }, 'SELECT log_id AS "logId" FROM log_identity');
    const logId = identity!.logId;
    const [original] = await listed(a);

    // The same log rebuilt by its operator: its id, a key of its own entered as the log's
    // first at the old key's time, and the same history written and signed again.
    const theirs = newSigningKey();
    const forged = await startApp({
      target,
      signingKey: theirs,
      open: async (db) => {
        await (await target.open(db)).close();
        await execute({ target, db }, `UPDATE log_identity SET log_id = '${logId}'`);
        return openStore(db, { now: () => Date.parse(original!.addedAt), signingKey: theirs });
      },
    });
    apps.push(forged);
    for (let pet = 1; pet <= 3; pet++) await forged.track(pet, 1);
    const [entered] = await listed(forged);
    assert.equal([entered!.keyId, entered!.addedAt, entered!.endorsedBy], [makeSigner(theirs).keyId, original!.addedAt, null]);
    const caught = await runScript('verify-log', ['--url', url(forged), '--checkpoint', file], { env: { INVENTORY_KEY: forged.key } });
    assert.is(caught.status, 1, caught.stderr);
    assert.match(caught.stderr, /^error: BROKEN: the newest checkpoint: it is signed by a key this monitor does not trust$/m);
    // Unlike verify-log --url without kept keys, which the rewrite passes.
    const fooled = await runScript('verify-log', ['--url', url(forged)], { env: { INVENTORY_KEY: forged.key } });
    assert.is(fooled.status, 0, fooled.stderr);
  } finally {
    for (const app of apps) await app.close();
    dir.cleanup();
  }
});

test('a key added unendorsed is said loudly and stays untrusted until pinned; add-signing wants --unendorsed', async ({ target }) => {
  const dir = tempDir('inv-pinned-unendorsed-');
  const K1 = newSigningKey();
  const apps: TestApp[] = [];
  try {
    const a = await startApp({ target, signingKey: K1, realClock: true });
    apps.push(a);
    await a.track(1, 1);
    const file = dir.path('checkpoint');
    assert.is((await runScript('verify-log', ['--url', url(a), '--checkpoint', file], { env: { INVENTORY_KEY: a.key } })).status, 0);

    const K2 = newSigningKey();
    const bare = await keysWithFiles(a.db, (f) => ['add-signing', f], undefined, K2);
    assert.is(bare.status, 2, bare.stderr);
    assert.match(bare.stderr, /--unendorsed/);
    const added = await keysWithFiles(a.db, (f) => ['add-signing', f, '--unendorsed'], undefined, K2);
    assert.is(added.status, 0, added.stderr);
    assert.match(added.stderr, /^WARNING: signing key [0-9a-f]{16} added to .* UNENDORSED: /);
    const [row] = await query<{ data: string }>(
      { target, db: a.db },
      "SELECT data FROM api_key_events WHERE type = 'SigningKeyAdded' AND name = ?",
      makeSigner(K2).keyId,
    );
    assert.match(row!.data, /"unendorsed":/, 'said in the key log');

    const b = await startApp({
      target,
      signingKey: K2,
      realClock: true,
      keyName: 'second',
      open: (_f, now) => openStore(a.db, { now, signingKey: K2 }),
    });
    apps.push(b);
    await b.track(2, 1);
    const untrusted = await runScript('verify-log', ['--url', url(b), '--checkpoint', file], { env: { INVENTORY_KEY: b.key } });
    assert.is(untrusted.status, 1, untrusted.stderr);
    assert.match(untrusted.stderr, /BROKEN: the newest checkpoint: it is signed by a key this monitor does not trust/);
    // Nor does a first run, with nothing kept, pin it: it is listed as untrusted, loudly.
    const firstRun = await runScript('verify-log', ['--url', url(b), '--checkpoint', dir.path('first-run')], {
      env: { INVENTORY_KEY: b.key },
    });
    assert.is(firstRun.status, 1, firstRun.stderr);
    assert.match(
      firstRun.stderr,
      new RegExp(
        `^UNTRUSTED: key ${makeSigner(K2).keyId} is listed by the log but not trusted: it has no endorsement \\(added --unendorsed`,
        'm',
      ),
    );
    assert.match(firstRun.stderr, /^error: BROKEN: the newest checkpoint: it is signed by a key this monitor does not trust$/m);
    const vkey = added.stdout.trim();
    const trusted = await runScript('verify-log', ['--url', url(b), '--checkpoint', file, '--trust', vkey], {
      env: { INVENTORY_KEY: b.key },
    });
    assert.is(trusted.status, 0, trusted.stderr);
    // So does a receipt checker that pinned the first key: the new key's receipts are
    // BROKEN until the new key is pinned too.
    const patched = await b.patch(1, { quantity: 4 });
    assert.is(patched.status, 200, patched.text);
    const [firstKey] = await listed(b);
    const receiptChecked = (pins: string[]) =>
      runScript('verify-receipt', ['--url', url(b), ...pins.flatMap((p) => ['--trust', p]), String(patched.headers['log-receipt'])], {
        env: { INVENTORY_KEY: b.key },
      });
    const unpinned = await receiptChecked([firstKey!.verifierKey]);
    assert.is(unpinned.status, 1, unpinned.stderr);
    assert.match(unpinned.stderr, /BROKEN: .*signed by a key this check does not trust/);
    assert.is((await receiptChecked([firstKey!.verifierKey, vkey])).status, 0);
  } finally {
    for (const app of apps) await app.close();
    dir.cleanup();
  }
});

test.run();
