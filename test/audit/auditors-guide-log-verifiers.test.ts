// docs/auditors.md's log verifiers, in Go (golang.org/x/mod/sumdb/note and tlog) and in
// Python (hashlib, cryptography), taken from the page as they are and built. Against a
// stand-in of the log's routes, both pass an intact log with a kept checkpoint and a
// receipt, print the same lines (Go's flags take --kept and --receipt too), and exit
// non-zero on a tampered proof or receipt, a forked or cut log, and a checkpoint signed
// by another key. Against the service on both stores, both check a kept checkpoint and
// a PATCH's receipt (also on a copy made by scripts/mirror and served by a static server,
// their consistency proofs folded from its tiles), and fail on a copy restored from before
// them with other writes on top; they follow a rotation done as documented
// (endorse-signing, a restart with the new key, retire-signing) with only the first key
// pinned, and refuse a key entered with SQL. A malformed signature line and a verifier key
// that is none are refused in one line.
import { generateKeyPairSync } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { LOG_VERIFIERS } from '../kit/auditors-guide.ts';
import { buildGo, guideBlock, run, type Ran } from '../kit/guide-programs.ts';
import { DOUBLE_KEY, newKey, startLogDouble } from '../kit/log-double.ts';
import { tempDir, type TempDir } from '../kit/paths.ts';
import { needing, tools, type Tool } from '../kit/tools.ts';
import { startApp, type TestApp } from '../kit/app.ts';
import { runScript } from '../kit/scripts.ts';
import { endorse, newSigningKey } from '../kit/signing-keys.ts';
import { openStore } from '../kit/stores.ts';
import { forgeSigningKey } from '../kit/tamper.ts';
import { makeSigner } from '../../src/support/signing.ts';
import { restoredCopy } from '../kit/restored-copy.ts';
import { mirrored } from '../kit/tiles.ts';
import { serveStatic } from '../kit/static-server.ts';
import { targetSuites } from '../kit/suites.ts';

const [GO, PYTHON] = LOG_VERIFIERS as [string, string];
type Verifier = (args: string[], key?: string) => Promise<Ran>;

/** An intact run's lines, then each lie: every verifier must print the same and fail on each. */
async function exercise(verify: Verifier, dir: TempDir): Promise<void> {
  const log = await startLogDouble();
  try {
    log.append(20);
    writeFileSync(dir.path('kept'), log.checkpoint(7));
    const receipt = log.receipt(3, 5);
    writeFileSync(dir.path('receipt'), `Log-Receipt: ${receipt}\n`);
    log.append(10);
    const args = (receiptFile = dir.path('receipt')) => [
      '--kept',
      dir.path('kept'),
      '--receipt',
      receiptFile,
      log.url,
      log.key.verifierKey,
    ];
    const intact = await verify(args());
    assert.is(intact.status, 0, intact.output);
    assert.is(
      intact.output,
      [
        `OK: the newest checkpoint (30 events) is signed by ${log.key.verifierKey.split('+')[0]}`,
        'OK: the kept checkpoint (7 events) is a prefix of the newest tree (30 events)',
        "OK: the receipt's event (seq 3) is in its checkpoint's tree (5 events)",
        "OK: the receipt's checkpoint (5 events) is a prefix of the newest tree (30 events)",
        '',
      ].join('\n'),
    );
    const original = [...log.events];
    const tamperedReceipt = (name: string, text: string) => {
      writeFileSync(dir.path(name), text);
      return dir.path(name);
    };
    const lies: [string, () => string | undefined, RegExp][] = [
      ['a consistency proof with a byte flipped', () => void (log.tamper.consistency = true), /does not extend it/],
      [
        'restored at 6, other writes on top',
        () => {
          log.events = original.slice(0, 6);
          log.append(30, 'restored');
          return undefined;
        },
        /kept checkpoint: the tree of 36 events does not extend it/,
      ],
      ['cut to 4', () => void (log.events = original.slice(0, 4)), /the log shrank from 7 to 4 events/],
      ['signed by another key', () => void (log.signer = newKey()), /^BROKEN: the newest checkpoint: /],
      // A signature line too short to hold a key hash and a signature: no signed note (C2SP).
      [
        'an extra signature line that is no signature',
        () => void (log.tamper.signatureLine = '\u2014 evil AAAA\n'),
        /^BROKEN: the newest checkpoint: .*malformed/m,
      ],
      [
        "a receipt's event hash changed",
        () => tamperedReceipt('other-hash', receipt.replace(/hash="[0-9a-f]{64}"/, `hash="${'cd'.repeat(32)}"`)),
        /^BROKEN: the receipt's event \(seq 3\) is not in its checkpoint's tree/m,
      ],
      [
        "a receipt's path hash changed",
        () =>
          tamperedReceipt(
            'other-path',
            receipt.replace(/proof=\(:(.)/, (_m, c: string) => `proof=(:${c === 'A' ? 'B' : 'A'}`),
          ),
        /^BROKEN: the receipt's event \(seq 3\) is not in its checkpoint's tree/m,
      ],
    ];
    for (const [what, lie, broken] of lies) {
      log.events = [...original];
      log.tamper = { inclusion: false, consistency: false };
      log.signer = log.key;
      const r = await verify(args(lie()));
      assert.is(r.status, 1, `${what}: ${r.output}`);
      assert.match(r.output, broken, what);
      assert.match(r.output, /^BROKEN: .*\n$/m, what);
    }
    // A verifier key that is none: one line saying so, no trace of the program's insides.
    for (const bad of [
      'nokey',
      `${log.key.verifierKey.split('+').slice(0, 2).join('+')}+AAAA`,
      log.key.verifierKey.replace(/\+[0-9a-f]{8}\+/, '+zz+'),
    ]) {
      const r = await verify([log.url, bad]);
      assert.ok(r.status !== 0 && r.status !== null, `${bad}: ${r.output}`);
      assert.match(r.output, /^error: [^\n]*\n$/, `${bad}: one line`);
    }
  } finally {
    await log.close();
  }
}

/** Builds the page's Go verifier in dir with Debian's x/mod. */
async function goVerifier(dir: TempDir): Promise<Verifier> {
  const program = await buildGo(dir, GO, 'verify_log');
  return (args, key = DOUBLE_KEY) => run(program, args, { INVENTORY_KEY: key });
}

function pythonVerifier(dir: TempDir): Verifier {
  writeFileSync(dir.path('verify_log.py'), guideBlock(PYTHON, 'python'));
  return (args, key = DOUBLE_KEY) => run('python3', [dir.path('verify_log.py'), ...args], { INVENTORY_KEY: key });
}

const LANGUAGES: [string, Tool[], (dir: TempDir) => Verifier | Promise<Verifier>][] = [
  ['Go, on note and tlog,', [tools.goSumdb], goVerifier],
  ['Python, on hashlib and cryptography,', [tools.python3, tools.pythonCryptography], pythonVerifier],
];

const test = suite("the auditors' guide: the log verifiers in Go and Python");

for (const [language, needs, make] of LANGUAGES) {
  needing(test, needs)(`the verifier in ${language} passes an intact log and fails on each lie`, async () => {
    const dir = tempDir('auditors-log-verifier-');
    try {
      await exercise(await make(dir), dir);
    } finally {
      dir.cleanup();
    }
  });
}

test.run();

const KEY = { pem: generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }) as string };
const service = targetSuites("the auditors' guide: the log verifiers against the service");

for (const [language, needs, make] of LANGUAGES) {
  needing(service, needs)(
    `the verifier in ${language} checks a kept checkpoint and a PATCH's receipt, and fails on a restored copy with other writes on top`,
    async ({ target }) => {
      const dir = tempDir('auditors-log-service-');
      const logs = await restoredCopy(target, KEY);
      try {
        const verify = await make(dir);
        const a = await logs.original();
        const patched = await a.patch(2, { quantity: 7 });
        assert.is(patched.status, 200, patched.text);
        writeFileSync(dir.path('receipt'), `Log-Receipt: ${patched.headers['log-receipt'] as string}\n`);
        writeFileSync(dir.path('kept'), (await a.get('/v1/log/checkpoint')).text);
        for (let i = 0; i < 4; i++) assert.is((await a.patch(3, { quantity: 10 + i })).status, 200);
        const [{ verifierKey }] = JSON.parse((await a.get('/v1/log/signing-keys')).text) as [{ verifierKey: string }];
        const args = (t: TestApp | string) => [
          '--kept',
          dir.path('kept'),
          '--receipt',
          dir.path('receipt'),
          typeof t === 'string' ? t : `http://127.0.0.1:${t.port}`,
          verifierKey,
        ];
        const intact = await verify(args(a), a.key);
        assert.is(intact.status, 0, intact.output);
        assert.match(
          intact.output,
          /^OK: the newest checkpoint \(10 events\) .*\nOK: the kept checkpoint \(6 events\) .*\nOK: the receipt's event \(seq 6\) .*\nOK: the receipt's checkpoint \(6 events\) is a prefix of the newest tree \(10 events\)\n$/,
        );
        // A copy served by a static server has no proof routes: the proofs come from its tiles.
        await mirrored(a, verifierKey, dir.path('copy'));
        const served = await serveStatic(dir.path('copy'));
        try {
          const onCopy = await verify(args(served.url), a.key);
          assert.is(onCopy.status, 0, onCopy.output);
          assert.is(onCopy.output, intact.output);
        } finally {
          await served.close();
        }
        const b = await logs.restored();
        for (let i = 0; i < 8; i++) assert.is((await b.patch(4, { quantity: 20 + i })).status, 200);
        const forked = await verify(args(b), b.key);
        assert.is(forked.status, 1, forked.output);
        assert.match(forked.output, /^BROKEN: the kept checkpoint: the tree of 13 events does not extend it/m);
      } finally {
        await logs.cleanup();
        dir.cleanup();
      }
    },
  );
}

for (const [language, needs, make] of LANGUAGES) {
  needing(service, needs)(
    `the verifier in ${language} follows a rotation (endorse, restart with the new key, retire) from the first key alone, and not a key entered with SQL`,
    async ({ target }) => {
      const dir = tempDir('auditors-log-rotation-');
      const [K1, K2, K3] = [newSigningKey(), newSigningKey(), newSigningKey()];
      const apps: TestApp[] = [];
      try {
        const verify = await make(dir);
        const a = await startApp({ target, signingKey: K1, realClock: true });
        apps.push(a);
        await a.track(1, 1);
        const patched = await a.patch(1, { quantity: 2 });
        assert.is(patched.status, 200, patched.text);
        writeFileSync(dir.path('receipt'), `Log-Receipt: ${patched.headers['log-receipt'] as string}\n`);
        writeFileSync(dir.path('kept'), (await a.get('/v1/log/checkpoint')).text);
        const [first] = JSON.parse((await a.get('/v1/log/signing-keys')).text) as [{ keyId: string; verifierKey: string }];

        await endorse(a.db, K1, K2);
        const b = await startApp({
          target,
          signingKey: K2,
          realClock: true,
          keyName: 'second',
          open: (_f, now) => openStore(a.db, { now, signingKey: K2 }),
        });
        apps.push(b);
        assert.is((await b.patch(1, { quantity: 3 })).status, 200);
        const retired = await runScript('keys', ['retire-signing', first.keyId, '--db', a.db]);
        assert.is(retired.status, 0, retired.stderr);
        const args = (t: TestApp) => [
          '--kept',
          dir.path('kept'),
          '--receipt',
          dir.path('receipt'),
          `http://127.0.0.1:${t.port}`,
          first.verifierKey,
        ];
        const rotated = await verify(args(b), b.key);
        assert.is(rotated.status, 0, rotated.output);
        assert.ok(
          rotated.output.startsWith(
            `OK: trusting key ${makeSigner(K2).keyId}: endorsed by ${first.verifierKey.split('+').slice(0, 2).join('+')}\n`,
          ),
          rotated.output,
        );
        assert.match(rotated.output, /^OK: the kept checkpoint \(2 events\) is a prefix of the newest tree \(3 events\)$/m);

        // A key written into the key log with SQL, endorsed by itself, signing on: BROKEN.
        await forgeSigningKey(target, a.db, K3, 'self-endorsed');
        const c = await startApp({ target, signingKey: K3, keyName: 'third', open: (_f, now) => openStore(a.db, { now, signingKey: K3 }) });
        apps.push(c);
        assert.is((await c.patch(1, { quantity: 4 })).status, 200);
        const forged = await verify(args(c), c.key);
        assert.is(forged.status, 1, forged.output);
        assert.match(
          forged.output,
          new RegExp(`^UNTRUSTED: key ${makeSigner(K3).keyId} is listed by the log, but no trusted key endorsed it$`, 'm'),
        );
        assert.match(forged.output, /^BROKEN: the newest checkpoint: /m);
      } finally {
        for (const app of apps) await app.close();
        dir.cleanup();
      }
    },
  );
}

service.run();
