// What the metrics hear of each HTTP request when its response closes: its method, route
// template, status and time, taken from the response here so that the metrics know
// nothing of HTTP.
import type { Observer } from './observe.ts';
import type { Metrics } from '../../application/health/metrics.ts';

export function metricsObserver(metrics: Pick<Metrics, 'requestTimed'>): Observer {
  return {
    answered(method, route, res, started) {
      // A change feed stream lasts as long as its reader follows: not a latency.
      if (String(res.getHeader('Content-Type') ?? '').startsWith('text/event-stream')) return;
      // A client that went away before its answer got no status.
      const status = res.headersSent ? res.statusCode : undefined;
      metrics.requestTimed(method, route, status, (performance.now() - started) / 1000);
    },
  };
}
