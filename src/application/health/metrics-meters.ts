// The service's own counters and histograms: requests, group commit, events appended,
// the store's faults, the list cache, clients gone, idempotent answers.
import { Counter, Histogram, type Registry } from 'prom-client';
import { requestDurations } from './request-durations.ts';
import { VersionConflict } from '../../store/event-log.ts';
import { StoreUnavailable, type StorageFault } from '../../store/health.ts';

const FAULT_KINDS = ['contention', 'storage', 'other'] as const;

/** What kind of fault an error (or an error it wraps) is. */
export function faultKind(error: unknown, faultOf: (error: unknown) => StorageFault | undefined): (typeof FAULT_KINDS)[number] {
  for (let e = error as { cause?: unknown } | undefined; e; e = e.cause as typeof e) {
    if (e instanceof StoreUnavailable) return 'storage';
    if (e instanceof VersionConflict) return 'contention';
    const fault = faultOf(e);
    if (fault) return fault.kind;
  }
  return 'other';
}

/** The requests' and commits' histograms, registered with registry. */
function timings(registry: Registry) {
  return {
    requestDuration: requestDurations({
      name: 'inventory_http_request_duration_seconds',
      help: 'Time from a request arriving to its response finished (or the client gone), by method, route template and status.',
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
    batchSize: new Histogram({
      name: 'inventory_commit_batch_size',
      help: 'Submissions (PATCHes, operator commands) committed together in one transaction by group commit.',
      buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512],
      registers: [registry],
    }),
    commitDuration: new Histogram({
      name: 'inventory_commit_duration_seconds',
      help: 'Time for one group-committed batch to be appended and made durable.',
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: [registry],
    }),
  };
}

/** The service's counters, registered with registry. */
function counters(registry: Registry) {
  const counter = <L extends string>(name: string, help: string, labelNames: readonly L[] = []) =>
    new Counter<L>({ name, help, labelNames, registers: [registry] });
  const eventsAppended = counter('inventory_events_appended_total', 'Events appended to the log by this process, by event type.', ['type']);
  const faults = counter(
    'inventory_storage_faults_total',
    'Requests answered 503 because of the store: contention (the write lock held too long, or other writers kept coming first), storage (disk full, read-only, I/O, connection lost) or other.',
    ['kind'],
  );
  for (const kind of FAULT_KINDS) faults.labels(kind).inc(0);
  return {
    eventsAppended,
    faults,
    renders: counter('inventory_list_renders_total', 'Times the GET /v1/inventory body was rendered from the store (after a change).'),
    hits: counter(
      'inventory_list_cache_hits_total',
      'GET /v1/inventory requests answered without a render of their own: from the body held in memory, or sharing a render under way.',
    ),
    aborts: counter(
      'inventory_client_aborts_total',
      'Answers cut short because the client went away (its connection reset or closed) before they were sent.',
    ),
    idempotentAnswers: counter(
      'inventory_idempotency_requests_total',
      'PATCHes with an Idempotency-Key whose key was used already: replayed (the stored answer given again, nothing appended), reused (422: another request) or in_flight (409).',
      ['outcome'],
    ),
  };
}

/** Every counter and histogram of the service, registered with registry in the page's order. */
export function serviceMeters(registry: Registry) {
  return { ...timings(registry), ...counters(registry) };
}
