// The clients' guide's TypeScript example, run the way a user runs it: in a fresh folder
// outside the repository (so nothing resolves from its node_modules), with the guide's
// package.json, its three files and its commands, the packages installed from the
// registry by one `npm install`, against a real service this test starts. Slow (the
// install takes most of a minute) but the only way to know the guide works for a user.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { clientGuideSetup, readmeClientFiles } from './kit/docs.ts';
import { root, tempDir } from './kit/paths.ts';
import { runScript } from './kit/scripts.ts';
import { killAll, startService } from './kit/service.ts';

const PET = '9007199254740993';

/** The user's environment: none of this repository's or npm's run-time variables. */
function userEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (name.startsWith('npm_') || ['NODE_OPTIONS', 'NODE_PATH', 'INVENTORY_DB', 'TEST_POSTGRES_URL'].includes(name)) continue;
    env[name] = value;
  }
  return { ...env, ...extra };
}

function sh(command: string, cwd: string, env: NodeJS.ProcessEnv): Promise<{ status: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('sh', ['-c', command], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], timeout: 300_000, killSignal: 'SIGKILL' });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (t: string) => (out += t));
    child.stderr.setEncoding('utf8').on('data', (t: string) => (out += t));
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, out }));
  });
}

test("the guide's setup, files and commands work in a fresh folder outside the repository", async () => {
  const guide = readFileSync(join(root, 'docs/clients.md'), 'utf8');
  const { packageJson, commands } = clientGuideSetup(guide);
  const files = readmeClientFiles(guide);
  const pkg = JSON.parse(packageJson) as { type?: string; dependencies: Record<string, string> };
  assert.is(pkg.type, 'module', 'package.json says "type": "module"');
  for (const [name, version] of Object.entries(pkg.dependencies)) {
    assert.match(version, /^\d+\.\d+\.\d+$/, `${name} is pinned to one version`);
  }

  const service = tempDir('clients-guide-service-');
  const user = tempDir('clients-guide-');
  assert.not.ok(user.dir.startsWith(root), 'the folder is outside the repository');
  try {
    const db = service.path('inventory.db');
    const running = await startService({ db, expectKey: true });
    const tracked = await runScript('track', [PET, '--quantity', '2'], { db });
    assert.is(tracked.status, 0, tracked.stderr);
    const origin = `http://127.0.0.1:${running.port}`;

    // The user's copy, with the address and key of this service where the guide has its examples.
    const local = (text: string) => text.replaceAll('http://127.0.0.1:8080', origin).replaceAll('pinv_your_key', running.bootstrapKey!);
    writeFileSync(user.path('package.json'), packageJson);
    for (const [name, code] of files) writeFileSync(user.path(name), local(code));
    assert.ok(
      commands.some((c) => c.includes('pinv_your_key')),
      'the commands name the key to replace',
    );
    assert.equal(commands[0], 'npm install', 'one npm install first');

    const env = userEnv({});
    const outputs: string[] = [];
    for (const command of commands) {
      const result = await sh(local(command), user.dir, env);
      assert.is(result.status, 0, `${command} failed:\n${result.out.slice(-3000)}`);
      outputs.push(result.out);
    }
    assert.ok(existsSync(user.path('inventory-api.ts')), 'generate-types.ts wrote the types');
    assert.ok(existsSync(user.path('node_modules/openapi-typescript')), 'the packages came from the registry into this folder');
    // usage.ts: read the entry, then update it with its version as If-Match: no 412.
    // (console.log colours a bigint when colours are forced, as uvu's run does.)
    // eslint-disable-next-line no-control-regex -- ANSI colour codes are what is removed
    const printed = outputs.at(-1)!.replace(/\x1b\[[0-9;]*m/g, '');
    assert.match(printed, new RegExp(`^read ${PET}n 2 "1"$`, 'm'), printed);
    assert.match(printed, new RegExp(`^updated ${PET}n 8 "2"$`, 'm'), printed);
    const after = await running.get(`/v1/inventory/${PET}`, running.bootstrapKey);
    assert.is(after.text, `{"petId":${PET},"quantity":8,"status":"available"}`);
    assert.is(after.headers.etag, '"2"');
  } finally {
    await killAll();
    user.cleanup();
    service.cleanup();
  }
});

test.run();
