// The clients' guide's TypeScript examples, run the way a user runs them: in a fresh
// folder outside the repository (so nothing resolves from its node_modules), with the
// guide's package.json, its files as written and its commands (only the address and the
// key are the reader's own), the packages installed from the registry, against a real
// service this test starts, with the pets the README's Quickstart tracks. Slow (the
// installs take most of a minute each) but the only way to know the guide works for a user.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { clientGuideSetup, commandsRunning, namedTsBlock, readmeClientFiles } from '../kit/docs.ts';
import { readLines, stopGroup } from '../kit/lines.ts';
import { root, tempDir, type TempDir } from '../kit/paths.ts';
import { runScript } from '../kit/scripts.ts';
import { killAll, startService, type Service } from '../kit/service.ts';

const PET = '9007199254740993';

/** The README's Quickstart: its two pets, as its commands track them, and its PATCH of pet 1 to 7. */
async function quickstart(db: string, running: Service): Promise<void> {
  for (const args of [['1', '--quantity', '5'], [PET]]) {
    const tracked = await runScript('track', args, { db });
    assert.is(tracked.status, 0, tracked.stderr);
  }
  const patched = await running.request({
    method: 'PATCH',
    path: '/v1/inventory/1',
    headers: { Authorization: `Bearer ${running.bootstrapKey!}`, 'Content-Type': 'application/json', 'X-Request-Id': 'recount-42' },
    body: '{"quantity": 7}',
  });
  assert.is(patched.status, 200, patched.text);
}

/** A command of the guide with this service's address and key where the guide has its examples. */
const localTo = (origin: string, key: string) => (text: string) =>
  text.replaceAll('http://127.0.0.1:8080', origin).replaceAll('pinv_your_key', key);

// console.log colours a bigint when colours are forced, as uvu's run does.
// eslint-disable-next-line no-control-regex -- ANSI colour codes are what is removed
const plain = (text: string) => text.replace(/\x1b\[[0-9;]*m/g, '');

interface Reader {
  running: Service;
  /** The reader's empty folder, outside the repository. */
  user: TempDir;
  /** A command of the guide with this service's address and key. */
  local: (text: string) => string;
}

/** A service on a fresh database after the Quickstart, and a reader's empty folder; both removed after. */
async function asReader(name: string, body: (reader: Reader) => Promise<void>): Promise<void> {
  const service = tempDir(`${name}-service-`);
  const user = tempDir(`${name}-`);
  assert.not.ok(user.dir.startsWith(root), 'the folder is outside the repository');
  try {
    const db = service.path('inventory.db');
    const running = await startService({ db, expectKey: true });
    await quickstart(db, running);
    await body({ running, user, local: localTo(`http://127.0.0.1:${running.port}`, running.bootstrapKey!) });
  } finally {
    await killAll();
    user.cleanup();
    service.cleanup();
  }
}

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

  await asReader('clients-guide', async ({ running, user, local }) => {
    // The files as written: the reader changes only the commands' address and key.
    writeFileSync(user.path('package.json'), packageJson);
    for (const [name, code] of files) writeFileSync(user.path(name), code);
    assert.ok(
      commands.some((c) => c.includes('pinv_your_key') && c.includes('INVENTORY_URL=http://127.0.0.1:8080')),
      'the commands name the key and the address to replace',
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
    // usage.ts prints what its comments say, after the Quickstart.
    const promised = [...files.get('usage.ts')!.matchAll(/^console\.log\(.*\); \/\/ (.+)$/gm)].map((m) => m[1]!);
    assert.ok(promised.length >= 3, `usage.ts says what it prints: ${promised.join(' | ')}`);
    const said = new Set(promised.map((line) => line.split(' ')[0]));
    const printed = plain(outputs.at(-1)!)
      .split('\n')
      .filter((line) => said.has(line.split(' ')[0]));
    assert.equal(printed, promised);
    const after = await running.get(`/v1/inventory/${PET}`, running.bootstrapKey);
    assert.is(after.text, `{"petId":${PET},"quantity":6,"status":"available"}`);
    assert.is(after.headers.etag, '"2"');
  });
});

test('the feed consumer runs as the guide says, from a folder whose package.json is not "type": "module"', async () => {
  const guide = readFileSync(join(root, 'docs/clients.md'), 'utf8');
  const code = namedTsBlock(guide, 'follow-log.ts');
  const commands = commandsRunning(guide, 'follow-log.ts');
  await asReader('clients-guide-feed', async ({ user, local }) => {
    writeFileSync(user.path('follow-log.ts'), code);
    const env = userEnv({});
    for (const command of commands.slice(0, -1)) {
      const result = await sh(local(command), user.dir, env);
      assert.is(result.status, 0, `${command} failed:\n${result.out.slice(-3000)}`);
    }
    // What npm made of the folder: CommonJS, as `npm init` and `npm install` leave it.
    if (existsSync(user.path('package.json'))) {
      assert.is((JSON.parse(readFileSync(user.path('package.json'), 'utf8')) as { type?: string }).type, undefined);
    }
    // The last command follows the feed until stopped: its own process group, stopped by it.
    const follower = readLines(spawn('sh', ['-c', local(commands.at(-1)!)], { cwd: user.dir, env, detached: true }));
    try {
      await follower.waitFor(2, 60_000);
      assert.match(plain(follower.lines[0]!), /^1 PetTracked pet 1 \{"quantity":5,/);
      assert.match(plain(follower.lines[1]!), new RegExp(`^2 PetTracked pet ${PET} \\{"quantity":0,`));
    } finally {
      // npx and tsx below it may still be ending when the shell has: the folder is
      // removed once none of them is left.
      await stopGroup(follower.proc);
    }
  });
});

test.run();
