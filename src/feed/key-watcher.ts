// Ends the streams of a key once it is revoked (or no longer authenticates): each key of
// the open streams is checked once per round, however many streams it opened.
import type { RepeatedWarning } from '../support/logger.ts';
import type { KeyStore } from '../store/keys.ts';
import type { FeedStream } from './feed-stream.ts';

export function makeKeyWatcher(
  keys: Pick<KeyStore, 'authenticate'>,
  warn: RepeatedWarning,
): (streams: Iterable<FeedStream>) => Promise<void> {
  return async (streams) => {
    const byKey = new Map<string, FeedStream[]>();
    for (const s of streams) byKey.set(s.key, [...(byKey.get(s.key) ?? []), s]);
    for (const [key, group] of byKey) {
      let valid: unknown;
      try {
        valid = await keys.authenticate(key);
      } catch (error) {
        // The store does not answer now: the key is checked again at the next round.
        warn('feed-keys', 1, { err: { message: (error as Error)?.message } }, 'the change feed could not check the keys of its streams');
        continue;
      }
      if (!valid) for (const s of group) s.finish('revoked');
    }
  };
}
