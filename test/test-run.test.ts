// `npm test -- FILE` runs that file alone, as the README tells a newcomer; a name that is
// no test file is a usage error rather than a run of nothing (or of everything).
import { spawnSync } from 'node:child_process';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { root } from './kit/paths.ts';

const npmTest = (...files: string[]) =>
  spawnSync('npm', ['test', '--silent', '--', ...files], { cwd: root, encoding: 'utf8', timeout: 120_000, env: { ...process.env } });
// eslint-disable-next-line no-control-regex -- uvu's colour codes are what is removed
const plain = (text: string) => text.replace(/\x1b\[[0-9;]*m/g, '');

test('npm test -- FILE runs only that file; two files run both', () => {
  const one = npmTest('test/preconditions.test.ts');
  const out = plain(one.stdout);
  assert.is(one.status, 0, out + one.stderr);
  assert.equal(
    [...out.matchAll(/^(\S+\.test\.ts)$/gm)].map((m) => m[1]),
    ['preconditions.test.ts'],
  );
  const two = npmTest('test/preconditions.test.ts', 'strict-json.test.ts');
  assert.is(two.status, 0, two.stderr);
  assert.equal([...plain(two.stdout).matchAll(/^(\S+\.test\.ts)$/gm)].map((m) => m[1]).sort(), [
    'preconditions.test.ts',
    'strict-json.test.ts',
  ]);
});

test('a name that is no test file exits 2 and says so', () => {
  const r = npmTest('test/no-such.test.ts');
  assert.is(r.status, 2);
  assert.match(r.stderr, /error: no such test file: test\/no-such\.test\.ts/);
});

test('the README says how to run one file and how long the whole suite takes', async () => {
  const { readFileSync } = await import('node:fs');
  const readme = readFileSync(`${root}/README.md`, 'utf8');
  assert.ok(readme.includes('npm test -- test/http-inventory.test.ts'), 'one file');
  assert.match(readme, /The whole suite takes about \d+ minutes/);
});

test.run();
