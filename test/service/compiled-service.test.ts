// npm start runs the service compiled (scripts/build.mjs into dist/), with no TypeScript
// loader in the service or its writer thread. Proven on a copy of the checkout whose
// node_modules holds only what a production install (`npm ci --omit=dev`) installs, the
// packages the lock file does not mark as development ones (tsx is not among them): the
// build (and again, writing nothing), the start (the writer thread opens and migrates the database, and writes the first key),
// the files the source finds next to itself (the OpenAPI document, the docs page, the
// migrations), and SIGTERM.
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, statSync, symlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { root, tempDir } from '../kit/paths.ts';
import { withTimeout } from '../kit/service.ts';

/** The packages of the lock file that a production install puts at the top of node_modules. */
function productionPackages(): string[] {
  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, { dev?: boolean }> };
  return Object.entries(lock.packages)
    .filter(([path, entry]) => /^node_modules\/(@[^/]+\/)?[^/]+$/.test(path) && !entry.dev)
    .map(([path]) => path.slice('node_modules/'.length));
}

test('the compiled service runs, writer thread included, where tsx cannot be loaded', async () => {
  const temp = tempDir('inv-compiled-');
  try {
    const copy = temp.path('checkout');
    mkdirSync(join(copy, 'node_modules'), { recursive: true });
    for (const part of ['src', 'migrations', 'scripts/build.mjs', 'package.json'])
      cpSync(join(root, part), join(copy, part), { recursive: true });
    for (const name of productionPackages()) {
      // Optional packages for other platforms are in the lock file but not installed here.
      if (!existsSync(join(root, 'node_modules', name))) continue;
      mkdirSync(dirname(join(copy, 'node_modules', name)), { recursive: true });
      symlinkSync(join(root, 'node_modules', name), join(copy, 'node_modules', name));
    }
    // The copy cannot load tsx: a test that could would prove nothing.
    const tsx = spawnSync(process.execPath, ['--input-type=module', '-e', "await import('tsx/esm/api')"], { cwd: copy });
    assert.is.not(tsx.status, 0, 'tsx loads in the copy');

    const build = () => spawnSync(process.execPath, ['scripts/build.mjs'], { cwd: copy, encoding: 'utf8', timeout: 60_000 });
    const built = build();
    assert.is(built.status, 0, built.stderr);
    // Built again with nothing changed, the bundles are left as they are (not written): a
    // checkout the service may not write starts once its owner has built it.
    const before = statSync(join(copy, 'dist/server.mjs'));
    assert.is(build().status, 0);
    const after = statSync(join(copy, 'dist/server.mjs'));
    assert.equal([after.ino, after.mtimeMs], [before.ino, before.mtimeMs], 'the bundle was written again');
    const proc = spawn(process.execPath, ['dist/server.mjs'], {
      cwd: copy,
      env: { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', INVENTORY_DB: temp.path('inventory.db') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    proc.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
    proc.stderr.setEncoding('utf8').on('data', (c: string) => (err += c));
    const exited = new Promise<number | null>((resolve) => proc.once('exit', resolve));
    try {
      const port = await withTimeout(
        (async () => {
          for (;;) {
            const found = /"url":"http:\/\/127\.0\.0\.1:(\d+)\/v1\/inventory"/.exec(out)?.[1];
            if (found) return Number(found);
            if (proc.exitCode !== null) throw new Error(`the service exited ${proc.exitCode}: ${err}`);
            await new Promise((resolve) => setTimeout(resolve, 50));
          }
        })(),
        30_000,
        'the compiled service listening',
      );
      const key = /pinv_[A-Za-z0-9]{32}/.exec(err)?.[0];
      assert.ok(key, 'a bootstrap key was printed');
      const base = `http://127.0.0.1:${port}`;
      const auth = { authorization: `Bearer ${key}` };
      assert.equal(await (await fetch(`${base}/v1/inventory`, { headers: auth })).json(), []);
      const spec = (await (await fetch(`${base}/openapi.json`)).json()) as { openapi: string };
      assert.match(spec.openapi, /^3\./);
      assert.is((await fetch(`${base}/docs`)).status, 200);
      proc.kill('SIGTERM');
      assert.is(await withTimeout(exited, 15_000, 'the compiled service stopping'), 0, err);
    } finally {
      proc.kill('SIGKILL');
    }
  } finally {
    temp.cleanup();
  }
});

test.run();
