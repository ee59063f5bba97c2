// `npm test -- FILE` runs that file alone, as the README tells a newcomer; a name that is
// no test file is a usage error rather than a run of nothing (or of everything); and the
// run's exit status says whether its tests passed.
import { spawnSync } from 'node:child_process';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { root } from '../kit/paths.ts';

const npmTest = (...files: string[]) =>
  spawnSync('npm', ['test', '--silent', '--', ...files], { cwd: root, encoding: 'utf8', timeout: 120_000, env: { ...process.env } });
// eslint-disable-next-line no-control-regex -- uvu's colour codes are what is removed
const plain = (text: string) => text.replace(/\x1b\[[0-9;]*m/g, '');

test('npm test -- FILE runs only that file; two files run both', () => {
  const one = npmTest('test/http/preconditions.test.ts');
  const out = plain(one.stdout);
  assert.is(one.status, 0, out + one.stderr);
  assert.equal(
    [...out.matchAll(/^(\S+\.test\.ts)$/gm)].map((m) => m[1]),
    ['http/preconditions.test.ts'],
  );
  const two = npmTest('test/http/preconditions.test.ts', 'json/strict-json.test.ts');
  assert.is(two.status, 0, two.stderr);
  assert.equal([...plain(two.stdout).matchAll(/^(\S+\.test\.ts)$/gm)].map((m) => m[1]).sort(), [
    'http/preconditions.test.ts',
    'json/strict-json.test.ts',
  ]);
});

test('a name that is no test file exits 2 and says so', () => {
  const r = npmTest('test/no-such.test.ts');
  assert.is(r.status, 2);
  assert.match(r.stderr, /error: no such test file: test\/no-such\.test\.ts/);
});

test("the exit status is the tests' status: 1 when a test fails, 0 when all pass", () => {
  const failing = npmTest('test/kit/probes/fails.probe.ts');
  assert.match(plain(failing.stdout), /Total:\s+1\n\s*Passed:\s+0\n/, failing.stdout + failing.stderr);
  assert.is(failing.status, 1, failing.stdout + failing.stderr);
  const passing = npmTest('test/kit/probes/passes.probe.ts');
  assert.match(plain(passing.stdout), /Total:\s+1\n\s*Passed:\s+1\n/, passing.stdout + passing.stderr);
  assert.is(passing.status, 0, passing.stdout + passing.stderr);
  // Both at once: one failure makes the whole run fail.
  assert.is(npmTest('test/kit/probes/passes.probe.ts', 'test/kit/probes/fails.probe.ts').status, 1);
});

test.run();
