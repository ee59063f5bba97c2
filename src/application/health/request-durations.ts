// The histogram of request durations, by method, route template and status. Every
// request is timed, so its observe is on every request's path, and prom-client's
// Histogram checks the label names, then builds and hashes a key of the labels, on each
// observe: more than the rest of a GET's metrics together. Here a request finds its
// series through three maps keyed by the label values themselves (a route template, a
// method, a status code: strings and numbers V8 has hashed already) and its bucket by a
// scan of the bounds.
// The registry prints a metric from what its get() returns, the shape getMetricsAsJSON
// returns: /metrics prints this one exactly as a prom-client Histogram of the same name,
// help, labels and buckets would (a test feeds both the same observations and compares
// the pages).
import type { Histogram, Registry } from 'prom-client';

type Label = 'method' | 'route' | 'status';

interface Series {
  labels: Record<Label, string>;
  /** Observations per bucket, not cumulative; the last is above every bound. */
  counts: Float64Array;
  sum: number;
  count: number;
}

export interface RequestDurations {
  /** status: undefined when the client went away before one was sent ('none'). */
  observe(method: string, route: string, status: number | undefined, seconds: number): void;
}

interface HistogramConfig {
  name: string;
  help: string;
  buckets: readonly number[];
  registers: Registry[];
}

export function requestDurations({ name, help, buckets, registers }: HistogramConfig): RequestDurations {
  const bounds = Float64Array.from(buckets);
  const byRoute = new Map<string, Map<string, Map<number, Series>>>();
  const series: Series[] = [];

  const seriesOf = (method: string, route: string, status: number | undefined): Series => {
    let byMethod = byRoute.get(route);
    if (!byMethod) byRoute.set(route, (byMethod = new Map<string, Map<number, Series>>()));
    let byStatus = byMethod.get(method);
    if (!byStatus) byMethod.set(method, (byStatus = new Map<number, Series>()));
    // No status is -1: a Map's number keys stay numbers.
    const code = status ?? -1;
    let found = byStatus.get(code);
    if (!found) {
      found = {
        labels: { method, route, status: status === undefined ? 'none' : String(status) },
        counts: new Float64Array(bounds.length + 1),
        sum: 0,
        count: 0,
      };
      byStatus.set(code, found);
      series.push(found);
    }
    return found;
  };

  const metric = {
    name,
    help,
    type: 'histogram',
    aggregator: 'sum',
    get() {
      const values: { labels: Record<string, string | number>; value: number; metricName: string }[] = [];
      for (const { labels, counts, sum, count } of series) {
        let below = 0;
        for (let i = 0; i < bounds.length; i++) {
          below += counts[i]!;
          values.push({ labels: { le: bounds[i]!, ...labels }, value: below, metricName: `${name}_bucket` });
        }
        values.push({ labels: { le: '+Inf', ...labels }, value: count, metricName: `${name}_bucket` });
        values.push({ labels: { ...labels }, value: sum, metricName: `${name}_sum` });
        values.push({ labels: { ...labels }, value: count, metricName: `${name}_count` });
      }
      return Promise.resolve({ name, help, type: 'histogram', aggregator: 'sum', values });
    },
    reset() {
      byRoute.clear();
      series.length = 0;
    },
  };
  // The registry's types admit prom-client's own classes only; what it asks of a metric
  // is the above (name, get, reset).
  for (const registry of registers) registry.registerMetric(metric as unknown as Histogram);

  return {
    observe(method, route, status, seconds) {
      const s = seriesOf(method, route, status);
      let i = 0;
      while (i < bounds.length && seconds > bounds[i]!) i++;
      s.counts[i]! += 1;
      s.sum += seconds;
      s.count += 1;
    },
  };
}
