// Waiting for a state instead of sleeping for a time: a check asked again every few ms
// until it holds, failing loudly past a bound far above what a loaded machine needs. A
// test that waits so is as fast as the machine lets it be and fails only when the state
// never comes.
import * as assert from 'uvu/assert';

/** Resolves once check() holds; fails the test with `what` after boundMs (15 s unless given). */
export async function waitUntil(check: () => boolean | Promise<boolean>, what: string, boundMs = 15_000): Promise<void> {
  const until = Date.now() + boundMs;
  while (!(await check())) {
    if (Date.now() > until) assert.unreachable(`${what}: not within ${boundMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
