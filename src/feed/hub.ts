// The change feed's streams in this process, wired together: each stream (stream.ts)
// first catches up from the log (catch-up.ts), then goes live and is sent what the tail
// publisher reads after each change (tail.ts); the key watcher (key-watcher.ts) ends the
// streams of revoked keys. One timer, running while a stream is open, drives heartbeats,
// the back-pressure cut-off, the change-token poll and the key checks.
//
// Bounds: at most maxStreams; a reader more than maxBehindBytes or maxBehindMs behind is
// cut off (it resumes from its last id); every stream ends within maxLifetimeMs, with a
// retry hint, so that a reader this process cannot see stalled (the kernel's buffers
// still take its heartbeats) gives its place back; a revoked key's streams end within
// keyCheckMs; close() (shutdown) sends every stream what was committed, then ends it.
import type { ServerResponse } from 'node:http';
import type { Registry } from 'prom-client';
import { repeatedWarnings, type Logger } from '../support/logger.ts';
import type { EventLog } from '../store/event-log.ts';
import type { KeyStore } from '../store/keys.ts';
import type { Projection } from '../store/projection.ts';
import { makeCatchUps } from './catch-up.ts';
import { FeedUnavailable } from './errors.ts';
import { makeKeyWatcher } from './key-watcher.ts';
import { DEFAULT_FEED_LIMITS, type FeedLimits } from './limits.ts';
import { makeFeedMetrics } from './metrics.ts';
import { makeStream, type Stream } from './stream.ts';
import { makeTailPublisher } from './tail.ts';

export type { FeedLimits } from './limits.ts';

type FeedStore = Pick<EventLog, 'eventsAfter'> & Pick<Projection, 'changeToken'> & { keys: Pick<KeyStore, 'authenticate'> };

export interface Feed {
  /** Throws FeedUnavailable when no stream can be opened now (full, or shutting down). */
  admit(): void;
  /** Follows the log on res (its head written) from after seq `after`, for as long as key is valid. */
  follow(res: ServerResponse, after: bigint, key: string): void;
  /** This process committed events: live streams get them now. */
  committed(): void;
  /** Streams open now. */
  size(): number;
  /** Sends every stream what was committed until now, then ends it; admits no more. */
  close(): Promise<void>;
}

interface FeedDeps {
  store: FeedStore;
  logger: Logger;
  limits?: Partial<FeedLimits>;
  /** Where the feed's gauges go (the app's /metrics). */
  registry?: Registry;
  now?: () => number;
}

export function makeFeed({ store, logger, limits: given = {}, registry, now = Date.now }: FeedDeps): Feed {
  const limits: FeedLimits = { ...DEFAULT_FEED_LIMITS, ...given };
  const streams = new Set<Stream>();
  const warn = repeatedWarnings(logger);
  const metrics = makeFeedMetrics(registry, () => streams.size);
  const tail = makeTailPublisher({ store, streams, commitReadGapMs: limits.commitReadGapMs, onSent: metrics.sent, warn, now });
  const catchUps = makeCatchUps({ store, reachedTail: tail.reachedTail, onSent: metrics.sent });
  const checkKeys = makeKeyWatcher(store.keys, warn);

  let closing = false;
  let ticking = false;
  let lastKeyCheck = 0;
  let timer: NodeJS.Timeout | undefined;

  const tick = async () => {
    if (ticking) return;
    ticking = true;
    try {
      const at = now();
      for (const s of streams) s.tick(at);
      await tail.poll();
      if (now() - lastKeyCheck >= limits.keyCheckMs) {
        lastKeyCheck = now();
        await checkKeys(streams);
      }
    } finally {
      ticking = false;
    }
  };
  const stopTimer = () => {
    clearInterval(timer);
    timer = undefined;
    tail.reset();
  };

  const onFinish = (s: Stream, reason: Parameters<typeof metrics.closed>[0]) => {
    streams.delete(s);
    metrics.closed(reason);
    if (streams.size === 0) stopTimer();
  };
  const failed = (s: Stream, error: unknown) => {
    const message = 'a change feed stream could not read the log; it was closed (its reader resumes)';
    warn('feed-read', 1, { err: { message: (error as Error)?.message } }, message);
    s.finish('error');
  };

  return {
    admit() {
      if (closing) throw new FeedUnavailable('shutting_down', 'the service is shutting down; reconnect to another instance');
      if (streams.size >= limits.maxStreams)
        throw new FeedUnavailable('full', `this instance has its ${limits.maxStreams} change feed streams open; retry later`);
    },
    follow(res, after, key) {
      const s = makeStream(res, key, after, { limits, now, onFinish });
      streams.add(s);
      timer ??= setInterval(() => void tick(), limits.pollMs).unref();
      s.pump = catchUps.catchUp(s, false).catch((error: unknown) => failed(s, error));
    },
    committed: () => tail.committed(),
    size: () => streams.size,
    async close() {
      closing = true;
      const grace = setTimeout(() => {
        for (const s of streams) s.finish('behind');
      }, limits.closeGraceMs).unref();
      await Promise.all(
        [...streams].map(async (s) => {
          // The publisher stops sending to it; its own last catch-up sends what was committed.
          s.live = false;
          await s.pump;
          if (s.done()) return;
          await catchUps.catchUp(s, true).catch((error: unknown) => failed(s, error));
          if (!s.done()) s.finish('shutdown');
        }),
      );
      clearTimeout(grace);
      stopTimer();
    },
  };
}
