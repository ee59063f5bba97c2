// The service's own answers and commands that the guides describe, pinned as behaviour:
// the Allow of each path (and its order), /readyz's storage fields on each store, which
// operator commands take --db, and that `npm start --silent` prints only JSON lines on
// standard output.
import { spawn } from 'node:child_process';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { stopGroup } from '../kit/lines.ts';
import { root, tempDir } from '../kit/paths.ts';
import { runScriptSync } from '../kit/scripts.ts';
import { withTimeout, WAIT_MS } from '../kit/service.ts';
import { appSuite } from '../kit/suites.ts';

const live = appSuite('the answers the clients guide describes');

live('Allow: each path names its methods, in this order, on OPTIONS and on a 405', async ({ t }) => {
  const auth = { Authorization: `Bearer ${t.key}` };
  for (const [path, allow] of [
    ['/v1/inventory', 'GET, HEAD, OPTIONS'],
    ['/v1/inventory/7', 'GET, HEAD, PATCH, OPTIONS'],
  ] as const) {
    const options = await t.request({ method: 'OPTIONS', path, headers: auth });
    assert.is(options.headers.allow, allow, `OPTIONS ${path}`);
    const wrong = await t.request({ method: 'DELETE', path, headers: auth });
    assert.is(wrong.status, 405);
    assert.is(wrong.headers.allow, allow, `DELETE ${path}`);
  }
});

live("/readyz: the storage fields of this store's kind, in this order", async ({ t, target }) => {
  const ready = await t.request({ path: '/readyz' });
  assert.is(ready.status, 200);
  const body = ready.json<{ status: string; storage?: Record<string, unknown> }>();
  assert.is(body.status, 'ok');
  const fields =
    target.name === 'sqlite'
      ? ['walBytes', 'walLimitBytes', 'walCheckpointBlockedForMs']
      : ['pool', 'notifications', 'lastCommitSeenAt', 'lastCommitSeenAgeSeconds'];
  assert.equal(Object.keys(body.storage ?? {}), fields);
  assert.equal((await t.request({ path: '/healthz' })).json(), { status: 'ok' });
});

live.run();

test('--db: every operator command takes it but copy-store and backup, which say so in --help', () => {
  for (const command of ['audit', 'keys', 'migrate', 'rebuild-projection', 'set-status', 'stock-at', 'track', 'verify-log']) {
    const help = runScriptSync(command, ['--help']).stdout;
    assert.match(help, /--db PATH\|URL/, `${command} --help: --db PATH|URL`);
  }
  const copy = runScriptSync('copy-store', ['--help']).stdout;
  assert.match(copy, /--from PATH\|URL --to PATH\|URL/);
  assert.match(runScriptSync('copy-store', ['--db', 'x']).stderr, /copy-store takes --from and --to, not --db/);
  const backup = runScriptSync('backup', ['--help']).stdout;
  assert.match(backup, /\[--db PATH\] OUT/);
  assert.not.match(backup, /--db PATH\|URL/);
});

test('`npm start --silent` prints only JSON lines on standard output', async () => {
  const dir = tempDir('npm-start-');
  const proc = spawn('npm', ['start', '--silent'], {
    cwd: root,
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', INVENTORY_DB: dir.path('inventory.db') },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  proc.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  proc.stderr.resume();
  const closed = new Promise<void>((resolve) => proc.on('close', () => resolve()));
  try {
    await withTimeout(
      new Promise<void>((resolve) => {
        const check = () => (out.includes('"msg":"listening"') ? resolve() : setTimeout(check, 50));
        check();
      }),
      WAIT_MS,
      `npm start to log "listening":\n${out}`,
    );
    const lines = out.split('\n').filter((l) => l !== '');
    assert.ok(lines.length > 0);
    for (const line of lines) assert.not.throws(() => void JSON.parse(line), `not JSON: ${line}`);
  } finally {
    // npm and the service it started: the whole group this test made, all of it gone
    // before its database's folder is removed.
    await stopGroup(proc, WAIT_MS);
    await withTimeout(closed, WAIT_MS, 'npm start to exit');
    dir.cleanup();
  }
});

test.run();
