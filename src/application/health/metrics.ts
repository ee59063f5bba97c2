// What GET /metrics shows, in the Prometheus text format (prom-client). Every label has
// a value from a small fixed set (an HTTP method, a route template, a status, an event
// type, a fault kind): never a pet id, a key's name, a request id or any other value a
// client chooses, so that the series stay few and the page shows no identifiers.
// The HTTP edge times each request and reports it here, by the labels it chose.
import { collectDefaultMetrics, Registry } from 'prom-client';
import { faultKind, serviceMeters } from './metrics-meters.ts';
import { storeGauges, type GaugedStore } from './metrics-store-gauges.ts';

export interface Metrics {
  registry: Registry;
  /** A request answered in `seconds`, by method, route template (that of the routes
   * serving the path) and status (undefined when the client went away before one). */
  requestTimed(method: string, route: string, status: number | undefined, seconds: number): void;
  /** A batch of submissions committed in `seconds`, appending events of these types. */
  committed(submissions: number, seconds: number, eventTypes: readonly string[]): void;
  /** A request was answered 503 because of this error of the store's. */
  unavailable(error: unknown): void;
  listRendered(): void;
  listServedFromCache(): void;
  /** A client went away before its answer was sent. */
  clientAborted(): void;
  /** A PATCH with an Idempotency-Key was answered from its stored answer, or refused. */
  idempotency(outcome: 'replayed' | 'reused' | 'in_flight'): void;
}

interface MetricsOptions {
  /** The store whose log and pool the gauges read when scraped. */
  store: GaugedStore;
  /** prom-client's process metrics (CPU, memory, event loop lag, handles). Each call
   * starts its own event-loop monitor, so tests that build many apps leave them off. */
  processMetrics?: boolean;
}

export function makeMetrics({ store, processMetrics = false }: MetricsOptions): Metrics {
  const registry = new Registry();
  if (processMetrics) {
    collectDefaultMetrics({ register: registry });
    // Gauges named like counters fail `promtool check metrics`; the same figures stay,
    // by type, in nodejs_active_handles, nodejs_active_requests and nodejs_active_resources.
    for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total']) {
      registry.removeSingleMetric(name);
    }
  }
  const meters = serviceMeters(registry);
  storeGauges(registry, store);
  return {
    registry,
    requestTimed: (method, route, status, seconds) => meters.requestDuration.observe(method, route, status, seconds),
    committed(submissions, seconds, eventTypes) {
      meters.batchSize.observe(submissions);
      meters.commitDuration.observe(seconds);
      for (const type of eventTypes) meters.eventsAppended.labels(type).inc();
    },
    unavailable: (error) => meters.faults.labels(faultKind(error, store.fault)).inc(),
    listRendered: () => meters.renders.inc(),
    listServedFromCache: () => meters.hits.inc(),
    clientAborted: () => meters.aborts.inc(),
    idempotency: (outcome) => meters.idempotentAnswers.labels(outcome).inc(),
  };
}
