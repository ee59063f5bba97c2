// scripts/command, the helper every operator command's script calls, run by hand the wrong
// way: a usage line and exit 2, not a shell's "can't shift" or a stack trace.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { root } from '../kit/paths.ts';

const run = (args: string[]) => spawnSync(join(root, 'scripts/command'), args, { encoding: 'utf8' });

test('without a command, or with one that is not an operator command: one usage line, exit 2', () => {
  for (const args of [[], ['nope'], ['../package.json'], ['command']]) {
    const r = run(args);
    assert.is(r.status, 2, `${JSON.stringify(args)}: ${r.stderr}`);
    assert.match(r.stderr, /^usage: scripts\/command COMMAND \[ARGUMENTS\.\.\.\]/, JSON.stringify(args));
    assert.is(r.stderr.split('\n').length, 2, 'one line');
    assert.is(r.stdout, '');
  }
});

test('an operator command runs as before', () => {
  const r = run(['keys', '--help']);
  assert.is(r.status, 0, r.stderr);
  assert.match(r.stdout, /keys/);
});

test.run();
