// A test file that passes, for the runner's own test (test/project/test-run.test.ts): its name
// matches no suite pattern, so only a run that names it runs it.
import { test } from 'uvu';
import * as assert from 'uvu/assert';

test('one and one make two', () => {
  assert.is(1 + 1, 2);
});

test.run();
