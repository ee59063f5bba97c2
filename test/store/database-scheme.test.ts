// An INVENTORY_DB (or --db) with a URL scheme other than postgres or postgresql, such as
// the typo postgress://, or any scheme without its // (postgres:/…, file:…), or a path
// with a query, is refused by the service and by every operator command in one line with
// its password masked, and nothing is created: taken as a SQLite path it would become a
// folder named after the URL (password included) with a new key in it.
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { root, tempDir, type TempDir } from '../kit/paths.ts';
import { runScriptSync } from '../kit/scripts.ts';
import { withTimeout } from '../kit/service.ts';
import { foreignSchemeProblem } from '../../src/store/target.ts';

const PASSWORD = 'Sup3rSecretPw';
const TYPO = `postgress://svc:${PASSWORD}@db.example/inv`;
/** Each URL, and how it is named in the error line. */
const URLS: [string, string][] = [
  [TYPO, 'postgress://svc:***@db.example/inv'],
  [`mysql://svc@db.example/inv?password=${PASSWORD}`, 'mysql://svc@db.example/inv?password=***'],
  // Not a URL that parses: nothing after its scheme is shown.
  [`sqlite://x:${PASSWORD}@/a b`, 'sqlite://…'],
  // A scheme without its two slashes: nothing after the scheme is shown.
  [`postgres:/svc:${PASSWORD}@db.example/inventory`, 'postgres:…'],
  [`postgresql:svc:${PASSWORD}@db.example/inventory`, 'postgresql:…'],
  ['postgres:x', 'postgres:…'],
  ['file:inv.db', 'file:…'],
  ['sqlite:inv.db', 'sqlite:…'],
  // SQLite URI options are not read: a query is refused, and not shown.
  ['inv.db?mode=ro', 'inv.db?…'],
  [`inv.db?password=${PASSWORD}`, 'inv.db?…'],
];

// Every command, with arguments it would otherwise accept.
const COMMANDS: [string, string[]][] = [
  ['migrate', []],
  ['keys', ['list']],
  ['keys', ['create', 'ops']],
  ['keys', ['revoke', 'ops']],
  ['track', ['7', '--quantity', '1']],
  ['set-status', ['7', 'sold']],
  ['rebuild-projection', []],
  ['rebuild-projection', ['--check']],
  ['verify-log', []],
  ['audit', []],
  ['stock-at', ['--at', '2026-01-01T00:00:00Z']],
  ['follow', []],
  ['backup', ['copy.db']],
];

const refused = suite<{ scratch: TempDir }>('a database URL of another scheme');

refused.before.each((ctx) => {
  ctx.scratch = tempDir('inventory-scheme-');
});
refused.after.each((ctx) => ctx.scratch.cleanup());

function assertRefusal(stderr: string, shown: string, what: string): void {
  assert.match(
    stderr,
    /^(petstore-inventory|error): [^\n]*: give a SQLite file path \(data\/inventory\.db; [^\n]*\) or a PostgreSQL URL \(postgres:\/\/USER/,
    what,
  );
  assert.ok(stderr.includes(` ${shown} `), `${what}: the URL is named, its password masked\n${stderr}`);
  assert.not.ok(stderr.includes(PASSWORD), `${what}: the password is not shown`);
}

refused('the service refuses it at start (exit 2, one line), creating nothing and printing no key', async ({ scratch }) => {
  for (const [url, shown] of URLS) {
    // In a scratch directory: a path relative to it is where a folder would appear.
    const proc = spawn(process.execPath, ['--import', join(root, 'node_modules/tsx/dist/loader.mjs'), join(root, 'src/server.ts')], {
      cwd: scratch.dir,
      env: { ...process.env, INVENTORY_DB: url, PORT: '0', HOST: '127.0.0.1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    proc.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
    proc.stderr.setEncoding('utf8').on('data', (c: string) => (err += c));
    const exited = new Promise<number | null>((resolve) => proc.on('close', (code) => resolve(code)));
    let code: number | null;
    try {
      code = await withTimeout(exited, 15_000, 'the service to refuse its database');
    } finally {
      proc.kill('SIGKILL');
    }
    assert.is(code, 2, `${url}: exit status\nstdout: ${out}\nstderr: ${err}`);
    assert.match(err, /^[^\n]+\n$/, `${url}: one line\n${err}`);
    assertRefusal(err, shown, url);
    assert.is(out, '', `${url}: nothing logged`);
    assert.equal(readdirSync(scratch.dir), [], `${url}: nothing created`);
  }
});

refused('every operator command refuses it, from INVENTORY_DB or --db, creating nothing', ({ scratch }) => {
  // Each command once each way (every form of URL is judged by the same line of code),
  // the forms taken in turn so that each is tried.
  for (const [i, [name, args]] of COMMANDS.entries()) {
    for (const [how, [url, shown]] of [
      ['env', URLS[(2 * i) % URLS.length]!],
      ['--db', URLS[(2 * i + 1) % URLS.length]!],
    ] as const) {
      const what = `${name} ${args.join(' ')} (${how} ${url})`;
      const r = runScriptSync(name, how === 'env' ? args : [...args, '--db', url], {
        cwd: scratch.dir,
        env: how === 'env' ? { INVENTORY_DB: url } : {},
        timeoutMs: 20_000,
      });
      assert.is(r.status, 2, `${what}: exit status\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
      assert.match(r.stderr, /^error: [^\n]+\nsee --help\n$/, `${what}: one line\n${r.stderr}`);
      assertRefusal(r.stderr, shown, what);
      assert.is(r.stdout, '', what);
      assert.equal(readdirSync(scratch.dir), [], `${what}: nothing created`);
    }
  }
});

refused('copy-store refuses it as --from or --to, creating nothing', ({ scratch }) => {
  for (const [url] of URLS) {
    for (const args of [
      ['--from', url, '--to', 'x.db'],
      ['--from', 'x.db', '--to', url],
    ]) {
      const what = `copy-store ${args.join(' ')}`;
      const r = runScriptSync('copy-store', args, { cwd: scratch.dir, timeoutMs: 20_000 });
      assert.is(r.status, 1, `${what}: exit status\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
      assert.match(r.stderr, /^error: [^\n]+\n$/, `${what}: one line\n${r.stderr}`);
      assert.not.ok(r.stderr.includes(PASSWORD), what);
      assert.equal(readdirSync(scratch.dir), [], `${what}: nothing created`);
    }
  }
});

refused('a path is a path: a colon after its first character, or in a later segment, is no scheme', () => {
  for (const path of ['data/inventory.db', './x:y.db', 'x.db', '/var/lib/inventory/inv:1.db', '../inventory.db']) {
    assert.is(foreignSchemeProblem(path, 'INVENTORY_DB'), undefined, path);
  }
});

refused.run();
