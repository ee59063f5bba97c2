// The feed's one timer, running while a stream is open: each round ticks every stream
// (heartbeat, back-pressure cut-off, lifetime), looks at the change token (the tail
// publisher's poll) and, once every keyCheckMs, checks the keys of the open streams.
import type { FeedStream } from './feed-stream.ts';
import type { FeedLimits } from './limits.ts';

interface RoundDeps {
  streams: ReadonlySet<FeedStream>;
  poll: () => Promise<void>;
  checkKeys: (streams: Iterable<FeedStream>) => Promise<void>;
  limits: Pick<FeedLimits, 'pollMs' | 'keyCheckMs'>;
  now: () => number;
}

interface Rounds {
  /** Starts the timer, unless it runs already. */
  start(): void;
  stop(): void;
}

export function makeRounds({ streams, poll, checkKeys, limits, now }: RoundDeps): Rounds {
  let ticking = false;
  let lastKeyCheck = 0;
  let timer: NodeJS.Timeout | undefined;

  const round = async () => {
    if (ticking) return;
    ticking = true;
    try {
      const at = now();
      for (const s of streams) s.tick(at);
      await poll();
      if (now() - lastKeyCheck >= limits.keyCheckMs) {
        lastKeyCheck = now();
        await checkKeys(streams);
      }
    } finally {
      ticking = false;
    }
  };

  return {
    start() {
      timer ??= setInterval(() => void round(), limits.pollMs).unref();
    },
    stop() {
      clearInterval(timer);
      timer = undefined;
    },
  };
}
