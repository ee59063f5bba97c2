// The operator commands run from their compiled bundles (dist/cli/, scripts/build.mjs),
// built by the first command that finds them missing or older than the source. Proven
// on a copy of the checkout that was never built, as a fresh clone is: commands started
// at once all work (each may build; none reads half a bundle), a command run again does
// not build again, and an edited source file is built before the next command runs.
import { spawn } from 'node:child_process';
import { cpSync, existsSync, readFileSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { root, tempDir } from '../kit/paths.ts';
import { withTimeout } from '../kit/service.ts';

interface Ran {
  status: number | null;
  stdout: string;
  stderr: string;
}

function run(cwd: string, command: string, args: string[]): Promise<Ran> {
  const proc = spawn(join(cwd, 'scripts', command), args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  proc.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
  proc.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  const done = new Promise<Ran>((resolve) => proc.once('close', (status) => resolve({ status, stdout, stderr })));
  return withTimeout(done, 60_000, `scripts/${command} ${args.join(' ')}`).finally(() => proc.kill('SIGKILL'));
}

test('a checkout never built runs its commands, builds once, and builds again after an edit', async () => {
  const temp = tempDir('inv-commands-');
  try {
    const copy = temp.path('checkout');
    for (const part of ['src', 'migrations', 'scripts', 'package.json']) cpSync(join(root, part), join(copy, part), { recursive: true });
    symlinkSync(join(root, 'node_modules'), join(copy, 'node_modules'));
    assert.not.ok(existsSync(join(copy, 'dist')), 'the copy starts unbuilt');
    const db = temp.path('inventory.db');

    const expectedHelp = await run(root, 'keys', ['--help']);
    assert.is(expectedHelp.status, 0, expectedHelp.stderr);
    // Three at once, each finding no bundle.
    const [migrate, help, wrong] = await Promise.all([
      run(copy, 'migrate', ['--db', db]),
      run(copy, 'keys', ['--help']),
      run(copy, 'track', ['--bogus']),
    ]);
    assert.is(migrate.status, 0, migrate.stderr);
    assert.is(help.status, 0, help.stderr);
    assert.is(help.stdout, expectedHelp.stdout);
    assert.is(wrong.status, 2, wrong.stderr);
    assert.match(wrong.stderr, /^error: /);

    const stamp = join(copy, 'dist/.built');
    const built = statSync(stamp).mtimeMs;
    const created = await run(copy, 'keys', ['--db', db, 'create', 'first']);
    assert.is(created.status, 0, created.stderr);
    assert.is(statSync(stamp).mtimeMs, built, 'a command with its bundle up to date built again');

    // An edit after the last build: the next command runs the edited source.
    const source = join(copy, 'src/cli/keys.ts');
    const text = readFileSync(source, 'utf8');
    assert.ok(text.includes('Exit status: 0 success'), 'the help text to edit');
    writeFileSync(source, text.replace('Exit status: 0 success', 'Exit status (edited): 0 success'));
    const past = (Date.now() - 60_000) / 1000;
    utimesSync(stamp, past, past);
    const edited = await run(copy, 'keys', ['--help']);
    assert.is(edited.status, 0, edited.stderr);
    assert.ok(edited.stdout.includes('Exit status (edited): 0 success'), edited.stdout);
    const listed = await run(copy, 'keys', ['--db', db, 'list']);
    assert.is(listed.status, 0, listed.stderr);
    assert.match(listed.stdout, /^first\s/m);
  } finally {
    temp.cleanup();
  }
});

test.run();
