// The change feed's streams in this process, wired together: each stream first catches
// up from the log (catch-up.ts), then goes live and is sent what the tail publisher reads
// after each change (tail.ts); the key watcher (key-watcher.ts) ends the streams of
// revoked keys; one timer (rounds.ts), running while a stream is open, drives heartbeats,
// the back-pressure cut-off, the change-token poll and the key checks. What carries a
// stream to its reader is not known here: the caller opens it (a FeedStream).
//
// Bounds: at most maxStreams; a reader more than maxBehindBytes or maxBehindMs behind is
// cut off (it resumes from its last id); every stream ends within maxLifetimeMs, with a
// retry hint, so that a reader this process cannot see stalled (the kernel's buffers
// still take its heartbeats) gives its place back; a revoked key's streams end within
// keyCheckMs; close() (shutdown) sends every stream what was committed, then ends it.
import type { Registry } from 'prom-client';
import { repeatedWarnings, type Logger } from '../support/logger.ts';
import type { EventLog } from '../store/event-log.ts';
import type { KeyStore } from '../store/keys.ts';
import type { Projection } from '../store/projection.ts';
import { makeCatchUps } from './catch-up.ts';
import { FeedUnavailable } from './errors.ts';
import type { FeedStream, OnFinish } from './feed-stream.ts';
import { makeKeyWatcher } from './key-watcher.ts';
import type { FeedLimits } from './limits.ts';
import { makeFeedMetrics } from './metrics.ts';
import { makeRounds } from './rounds.ts';
import { makeTailPublisher } from './tail.ts';

export type FeedStore = Pick<EventLog, 'eventsAfter'> & Pick<Projection, 'changeToken'> & { keys: Pick<KeyStore, 'authenticate'> };

export interface Coordinator {
  /** Throws FeedUnavailable when no stream can be opened now (full, or shutting down). */
  admit(): void;
  /** Follows the log on the stream open() gives, told how to report its end. */
  follow(open: (onFinish: OnFinish) => FeedStream): void;
  /** This process committed events: live streams get them now. */
  committed(): void;
  /** Streams open now. */
  size(): number;
  /** Sends every stream what was committed until now, then ends it; admits no more. */
  close(): Promise<void>;
}

interface CoordinatorDeps {
  store: FeedStore;
  logger: Logger;
  limits: FeedLimits;
  /** Where the feed's gauges go (the app's /metrics). */
  registry?: Registry | undefined;
  now: () => number;
}

/** Sends each stream what was committed (its last catch-up), then ends it; past graceMs,
 * the streams still waiting are cut off. */
async function finishAll(streams: Set<FeedStream>, graceMs: number, lastCatchUp: (s: FeedStream) => Promise<void>): Promise<void> {
  const grace = setTimeout(() => {
    for (const s of streams) s.finish('behind');
  }, graceMs).unref();
  await Promise.all(
    [...streams].map(async (s) => {
      // The publisher stops sending to it; its own last catch-up sends what was committed.
      s.live = false;
      await s.pump;
      if (s.done()) return;
      await lastCatchUp(s);
      if (!s.done()) s.finish('shutdown');
    }),
  );
  clearTimeout(grace);
}

export function makeCoordinator({ store, logger, limits, registry, now }: CoordinatorDeps): Coordinator {
  const streams = new Set<FeedStream>();
  const warn = repeatedWarnings(logger);
  const metrics = makeFeedMetrics(registry, () => streams.size);
  const tail = makeTailPublisher({ store, streams, commitReadGapMs: limits.commitReadGapMs, onSent: metrics.sent, warn, now });
  const catchUps = makeCatchUps({ store, reachedTail: tail.reachedTail, onSent: metrics.sent });
  const rounds = makeRounds({ streams, poll: tail.poll, checkKeys: makeKeyWatcher(store.keys, warn), limits, now });
  let closing = false;

  const stop = () => {
    rounds.stop();
    tail.reset();
  };
  const onFinish: OnFinish = (s, reason) => {
    streams.delete(s);
    metrics.closed(reason);
    if (streams.size === 0) stop();
  };
  const catchUp = (s: FeedStream, final: boolean) =>
    catchUps.catchUp(s, final).catch((error: unknown) => {
      const message = 'a change feed stream could not read the log; it was closed (its reader resumes)';
      warn('feed-read', 1, { err: { message: (error as Error)?.message } }, message);
      s.finish('error');
    });

  return {
    admit() {
      if (closing) throw new FeedUnavailable('shutting_down', 'the service is shutting down; reconnect to another instance');
      if (streams.size >= limits.maxStreams)
        throw new FeedUnavailable('full', `this instance has its ${limits.maxStreams} change feed streams open; retry later`);
    },
    follow(open) {
      const s = open(onFinish);
      streams.add(s);
      rounds.start();
      s.pump = catchUp(s, false);
    },
    committed: () => tail.committed(),
    size: () => streams.size,
    async close() {
      closing = true;
      await finishAll(streams, limits.closeGraceMs, (s) => catchUp(s, true));
      stop();
    },
  };
}
