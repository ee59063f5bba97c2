// What the guides say about the service's own answers and commands, checked against the
// service and the commands themselves: the Allow of each path (and its order), /readyz's
// body on each store, which operator commands take --db, and that `npm start --silent`
// prints only JSON lines on standard output, as the operators' guide says.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { root, tempDir } from './kit/paths.ts';
import { runScriptSync } from './kit/scripts.ts';
import { withTimeout, WAIT_MS } from './kit/service.ts';
import { appSuite } from './kit/suites.ts';

const page = (name: string) => readFileSync(join(root, name), 'utf8').replace(/\s+/g, ' ');
const clients = page('docs/clients.md');
const operators = page('docs/operators.md');

const live = appSuite('the clients guide describes the answers the service gives');

live("Allow: the clients' guide gives each path's, in the order the service sends, on OPTIONS and on a 405", async ({ t }) => {
  const auth = { Authorization: `Bearer ${t.key}` };
  for (const [docPath, path] of [
    ['/v1/inventory', '/v1/inventory'],
    ['/v1/inventory/{petId}', '/v1/inventory/7'],
  ] as const) {
    const said = new RegExp(`\`([A-Z, ]+)\` for \`${docPath.replace(/[{}]/g, '\\$&')}\``).exec(clients);
    assert.ok(said, `the guide gives the Allow of ${docPath}`);
    const options = await t.request({ method: 'OPTIONS', path, headers: auth });
    assert.is(options.headers.allow, said[1], `OPTIONS ${path}`);
    const wrong = await t.request({ method: 'DELETE', path, headers: auth });
    assert.is(wrong.status, 405);
    assert.is(wrong.headers.allow, said[1], `DELETE ${path}`);
  }
  assert.ok(clients.includes('with a valid key is 405 with `Allow: GET, HEAD, PATCH, OPTIONS`'), 'the precedence example');
});

live("/readyz: the body is the one the clients' guide gives for this store", async ({ t, target }) => {
  const ready = await t.request({ path: '/readyz' });
  assert.is(ready.status, 200);
  const body = ready.json<{ status: string; storage?: Record<string, unknown> }>();
  assert.is(body.status, 'ok');
  const shown = new RegExp(
    `on\\s+${target.name === 'sqlite' ? 'SQLite' : 'PostgreSQL'},?\\s+\`(\\{"status":"ok","storage":\\{[^\`]+\\}\\})\``,
  ).exec(clients);
  assert.ok(shown, `the guide shows the body on ${target.name}`);
  const keys = [...shown[1]!.matchAll(/"(\w+)":…/g)].map((m) => m[1]);
  assert.equal(keys, Object.keys(body.storage ?? {}), 'the same storage fields');
  assert.equal((await t.request({ path: '/healthz' })).json(), { status: 'ok' });
});

live.run();

test("--db: every operator command takes it but the two the operators' guide names, which say so in --help", () => {
  assert.ok(
    operators.includes('with two exceptions: `scripts/copy-store` takes `--from` and `--to` instead'),
    'the guide names copy-store',
  );
  assert.ok(operators.includes('`scripts/backup` copies a SQLite file only (`--db PATH`'), 'the guide names backup');
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

test('`npm start --silent` prints only JSON lines on standard output, as the guide says', async () => {
  assert.ok(operators.includes('start it with `npm start --silent`'), 'the guide says how');
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
    // npm and the service it started: the whole group this test made.
    process.kill(-proc.pid!, 'SIGTERM');
    await withTimeout(closed, WAIT_MS, 'npm start to exit');
    dir.cleanup();
  }
});

test.run();
