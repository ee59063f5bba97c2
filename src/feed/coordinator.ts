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
import { FeedKeyFull, FeedUnavailable } from './errors.ts';
import type { FeedStream, OnFinish } from './feed-stream.ts';
import { makeKeyWatcher } from './key-watcher.ts';
import type { FeedLimits } from './limits.ts';
import { makeFeedMetrics } from './metrics.ts';
import { makeRounds } from './rounds.ts';
import { makeTailPublisher } from './tail.ts';

export type FeedStore = Pick<EventLog, 'eventsAfter'> & Pick<Projection, 'changeToken'> & { keys: Pick<KeyStore, 'authenticate'> };

/** A stream's place, held from its admission: it follows the log, or gives the place back. */
interface Admission {
  /** Follows the log on the stream open() gives, told how to report its end. */
  follow(open: (onFinish: OnFinish) => FeedStream): void;
  /** The stream will not open after all (its cursor was refused). */
  cancel(): void;
}

export interface Coordinator {
  /**
   * A place for a stream of the key named holder. Throws FeedUnavailable when no stream
   * can be opened now (full, or shutting down), FeedKeyFull when that key holds all its own.
   */
  admit(holder: string): Admission;
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
  // The places each key holds (its streams and those admitted, not yet open), and the
  // admitted ones of all keys: counted from admission, so that requests that check at
  // once cannot all pass before any of them opens.
  const heldBy = new Map<string, number>();
  const holderOf = new Map<FeedStream, string>();
  let admitted = 0;
  const giveBack = (holder: string) => {
    const left = heldBy.get(holder)! - 1;
    if (left === 0) heldBy.delete(holder);
    else heldBy.set(holder, left);
  };
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
    if (!streams.delete(s)) return;
    giveBack(holderOf.get(s)!);
    holderOf.delete(s);
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
    admit(holder) {
      if (closing) throw new FeedUnavailable('shutting_down', 'the service is shutting down; reconnect to another instance');
      const held = heldBy.get(holder) ?? 0;
      if (held >= limits.maxStreamsPerKey)
        throw new FeedKeyFull(`this API key has ${limits.maxStreamsPerKey} change feed streams open on this instance, the most it may`);
      if (streams.size + admitted >= limits.maxStreams)
        throw new FeedUnavailable('full', `this instance has its ${limits.maxStreams} change feed streams open; retry later`);
      heldBy.set(holder, held + 1);
      admitted++;
      let pending = true;
      const settle = () => {
        if (!pending) throw new Error('a stream admission was used twice');
        pending = false;
        admitted--;
      };
      return {
        follow(open) {
          settle();
          const s = open(onFinish);
          // Its reader left before it opened: the place is free again.
          if (s.done()) {
            giveBack(holder);
            return;
          }
          streams.add(s);
          holderOf.set(s, holder);
          rounds.start();
          s.pump = catchUp(s, false);
        },
        cancel() {
          settle();
          giveBack(holder);
        },
      };
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
