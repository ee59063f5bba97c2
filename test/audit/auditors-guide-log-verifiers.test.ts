// docs/auditors.md's log verifiers, in Go (golang.org/x/mod/sumdb/note and tlog) and in
// Python (hashlib, cryptography), taken from the page as they are, built and run against
// a stand-in of the log's routes: both pass on an intact log with a kept checkpoint and a
// receipt, print the same lines (Go's flags take --kept and --receipt too), and exit non-zero on a tampered proof or receipt, a
// forked or cut log, and a checkpoint signed by another key.
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { blocks, LOG_VERIFIERS, pageText } from '../kit/auditors-guide.ts';
import { DOUBLE_KEY, newKey, startLogDouble } from '../kit/log-double.ts';
import { tempDir, type TempDir } from '../kit/paths.ts';
import { GO_PATH, needing, tools } from '../kit/tools.ts';

interface Ran {
  status: number | null;
  output: string;
}

/** Runs a program (not spawnSync: the stand-in answering it runs in this process). */
function run(file: string, args: string[], env: Record<string, string> = {}, cwd?: string): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'], timeout: 300_000 });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (output += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (output += c));
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, output }));
  });
}

function guideBlock(heading: string, lang: string): string {
  const found = blocks(pageText()).filter((b) => b.heading === heading && b.lang === lang);
  assert.is(found.length, 1, `one ${lang} block under "${heading}"`);
  return found[0]!.text;
}

const [GO, PYTHON] = LOG_VERIFIERS as [string, string];
type Verifier = (args: string[]) => Promise<Ran>;

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
      log.tamper.consistency = false;
      log.signer = log.key;
      const r = await verify(args(lie()));
      assert.is(r.status, 1, `${what}: ${r.output}`);
      assert.match(r.output, broken, what);
      assert.match(r.output, /^BROKEN: .*\n$/m, what);
    }
  } finally {
    await log.close();
  }
}

const test = suite("the auditors' guide: the log verifiers in Go and Python");

needing(test, [tools.goSumdb])('the Go verifier, on note and tlog, passes an intact log and fails on each lie', async () => {
  const dir = tempDir('auditors-go-');
  try {
    writeFileSync(dir.path('verify_log.go'), guideBlock(GO, 'go'));
    const env = { GOPATH: GO_PATH, GO111MODULE: 'off', GOCACHE: dir.path('go-cache'), GOFLAGS: '' };
    const built = await run('go', ['build', '-o', 'verify_log', 'verify_log.go'], env, dir.dir);
    assert.is(built.status, 0, built.output);
    await exercise((args) => run(dir.path('verify_log'), args, { INVENTORY_KEY: DOUBLE_KEY }), dir);
  } finally {
    dir.cleanup();
  }
});

needing(test, [tools.python3, tools.pythonCryptography])(
  'the Python verifier, on hashlib and cryptography, passes an intact log and fails on each lie',
  async () => {
    const dir = tempDir('auditors-python-log-');
    try {
      writeFileSync(dir.path('verify_log.py'), guideBlock(PYTHON, 'python'));
      await exercise((args) => run('python3', [dir.path('verify_log.py'), ...args], { INVENTORY_KEY: DOUBLE_KEY }), dir);
    } finally {
      dir.cleanup();
    }
  },
);

test.run();
