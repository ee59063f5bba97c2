// What the feed shows on /metrics: its streams open, the events sent, and why streams ended.
import { Counter, Gauge, type Registry } from 'prom-client';
import { CLOSE_REASONS, type CloseReason } from './feed-stream.ts';

interface FeedMetrics {
  sent: (count: number) => void;
  closed: (reason: CloseReason) => void;
}

/** registry: where the feed's metrics go (none: counted, shown nowhere). */
export function makeFeedMetrics(registry: Registry | undefined, open: () => number): FeedMetrics {
  const registers = registry ? [registry] : [];
  new Gauge({
    name: 'inventory_feed_streams',
    help: 'Change feed streams (GET /v1/events as text/event-stream) open now.',
    registers,
    collect() {
      this.set(open());
    },
  });
  const sent = new Counter({
    name: 'inventory_feed_events_sent_total',
    help: 'Events sent on change feed streams.',
    registers,
  });
  const closed = new Counter({
    name: 'inventory_feed_streams_closed_total',
    help: 'Change feed streams ended, by reason: client (went away), behind (its reader fell too far behind), lifetime (it was open for as long as a stream may be; its reader reconnects), revoked (its key), shutdown, error (reading the log failed).',
    labelNames: ['reason'] as const,
    registers,
  });
  for (const reason of CLOSE_REASONS) closed.labels(reason).inc(0);
  return {
    sent: (count) => {
      if (count > 0) sent.inc(count);
    },
    closed: (reason) => closed.labels(reason).inc(),
  };
}
