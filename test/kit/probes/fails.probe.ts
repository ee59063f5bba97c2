// A test file that fails, for the runner's own test (test/project/test-run.test.ts): its name
// matches no suite pattern, so only a run that names it runs it.
import { test } from 'uvu';
import * as assert from 'uvu/assert';

test('one and one make three', () => {
  assert.is(1 + 1, 3);
});

test.run();
