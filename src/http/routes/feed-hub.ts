// The change feed over HTTP: the feed's coordinator (src/feed) follows the log for each
// stream, and each stream is written as Server-Sent Events on its response.
import type { ServerResponse } from 'node:http';
import type { Registry } from 'prom-client';
import type { Logger } from '../../support/logger.ts';
import { makeCoordinator, type Coordinator, type FeedStore } from '../../feed/coordinator.ts';
import { DEFAULT_FEED_LIMITS, type FeedLimits } from '../../feed/limits.ts';
import { makeSseStream } from './sse-stream.ts';

/** A stream's place (Coordinator.admit), on HTTP. */
interface StreamAdmission {
  /** Follows the log on res (its head written) from after seq `after`, for as long as key is valid. */
  follow(res: ServerResponse, after: bigint, key: string): void;
  cancel(): void;
}

export interface Feed extends Omit<Coordinator, 'admit'> {
  /** A place for a stream of the key named holder (see Coordinator.admit). */
  admit(holder: string): StreamAdmission;
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
  const coordinator = makeCoordinator({ store, logger, limits, registry, now });
  return {
    ...coordinator,
    admit(holder) {
      const admission = coordinator.admit(holder);
      return {
        follow: (res, after, key) => admission.follow((onFinish) => makeSseStream(res, key, after, { limits, now, onFinish })),
        cancel: () => admission.cancel(),
      };
    },
  };
}
