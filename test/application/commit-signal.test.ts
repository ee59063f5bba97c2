// The one in-process commit signal: every subscriber hears each commit, in the order it
// subscribed, until it unsubscribes.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { makeCommitSignal } from '../../src/application/write/commit-signal.ts';

test('each subscriber is told of each commit until it unsubscribes', () => {
  const signal = makeCommitSignal();
  const heard: string[] = [];
  const stopHealth = signal.subscribe(() => heard.push('health'));
  signal.subscribe(() => heard.push('feed'));
  signal.emit();
  stopHealth();
  signal.emit();
  assert.equal(heard, ['health', 'feed', 'feed']);
});

test('one function subscribed twice is told twice, and one unsubscribe removes one', () => {
  const signal = makeCommitSignal();
  let count = 0;
  const listener = () => count++;
  const first = signal.subscribe(listener);
  signal.subscribe(listener);
  signal.emit();
  first();
  signal.emit();
  assert.is(count, 3);
});

test.run();
