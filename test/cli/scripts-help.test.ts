// Every developers' script answers --help with what it does and how to call it, and a
// wrong argument with one error line, exit 2 and no stack; none starts its work (a
// benchmark, a picture) for either. The npm scripts are asked through npm, as the docs
// call them.
import { spawnSync } from 'node:child_process';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { root } from '../kit/paths.ts';

const SCRIPTS = ['bench', 'soak', 'bench-rebuild', 'bench-listing', 'dashboard-picture', 'profile', 'stall-attack'];
const NPM = ['bench', 'soak', 'bench:rebuild'];
const STACK = /\n\s+at |ERR_PARSE_ARGS|node:internal/;

function node(script: string, args: string[]) {
  return spawnSync(process.execPath, ['--import', 'tsx', `scripts/${script}.ts`, ...args], {
    cwd: root,
    encoding: 'utf8',
    timeout: 20_000,
  });
}

test('node --import tsx scripts/X.ts --help prints its usage and exits 0; a wrong argument exits 2 with one line', () => {
  for (const script of SCRIPTS) {
    for (const help of script === 'bench' ? ['--help', '-h'] : ['--help']) {
      const r = node(script, [help]);
      assert.is(r.status, 0, `${script} ${help}: ${r.stderr}`);
      assert.ok(r.stdout.length > 100 && !r.stdout.includes('//'), `${script} ${help} prints its header:\n${r.stdout}`);
      assert.is(r.stderr, '', `${script} ${help}`);
    }
    // dashboard-picture and profile take one positional argument, the others none.
    // stall-attack parses its own arguments (its --help is checked above).
    for (const wrong of script === 'stall-attack' ? [] : [['--bogus'], ['1', '2']]) {
      const r = node(script, wrong);
      assert.is(r.status, 2, `${script} ${wrong.join(' ')}: ${r.stdout}${r.stderr}`);
      assert.match(r.stderr, /^error: [^\n]+\nsee --help\n$/, `${script} ${wrong.join(' ')}`);
      assert.not.match(r.stderr, STACK);
    }
  }
});

test('npm run bench|soak|bench:rebuild -- --help print the usage, not a stack', () => {
  for (const name of NPM) {
    const r = spawnSync('npm', ['run', '--silent', name, '--', '--help'], { cwd: root, encoding: 'utf8', timeout: 30_000 });
    assert.is(r.status, 0, `npm run ${name} -- --help: ${r.stderr}`);
    assert.ok(r.stdout.includes(`npm run ${name}`), `npm run ${name} -- --help names itself:\n${r.stdout}`);
    assert.not.match(r.stdout + r.stderr, STACK);
  }
});

test.run();
