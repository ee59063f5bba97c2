// What GET /metrics shows, in the Prometheus text format (prom-client). Every label has
// a value from a small fixed set (an HTTP method, a route template, a status, an event
// type, a fault kind): never a pet id, a key's name, a request id or any other value a
// client chooses, so that the series stay few and the page shows no identifiers.
import type { ServerResponse } from 'node:http';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { within } from './deadline.ts';
import { VersionConflict } from '../store/event-log.ts';
import { DeadlinePassed, StoreUnavailable, type StorageFault, type StoreHealth } from '../store/health.ts';
import type { InventoryStore } from '../store/port.ts';

export interface Metrics {
  registry: Registry;
  /** Times a request whose res closed, started at performance.now() `started`, by
   * method, route template (that of the routes serving the path) and status. */
  answered(method: string, route: string, res: ServerResponse, started: number): void;
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
  store: Pick<StoreHealth, 'diagnostics' | 'fault'> & Partial<Pick<InventoryStore, 'idempotency'>>;
  /** prom-client's process metrics (CPU, memory, event loop lag, handles). Each call
   * starts its own event-loop monitor, so tests that build many apps leave them off. */
  processMetrics?: boolean;
}

const FAULT_KINDS = ['contention', 'storage', 'other'] as const;

/** What kind of fault an error (or an error it wraps) is. */
function faultKind(error: unknown, faultOf: (error: unknown) => StorageFault | undefined): (typeof FAULT_KINDS)[number] {
  for (let e = error as { cause?: unknown } | undefined; e; e = e.cause as typeof e) {
    if (e instanceof StoreUnavailable) return 'storage';
    if (e instanceof VersionConflict) return 'contention';
    const fault = faultOf(e);
    if (fault) return fault.kind;
  }
  return 'other';
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

  const requestDuration = new Histogram({
    name: 'inventory_http_request_duration_seconds',
    help: 'Time from a request arriving to its response finished (or the client gone), by method, route template and status.',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const batchSize = new Histogram({
    name: 'inventory_commit_batch_size',
    help: 'Submissions (PATCHes, operator commands) committed together in one transaction by group commit.',
    buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512],
    registers: [registry],
  });
  const commitDuration = new Histogram({
    name: 'inventory_commit_duration_seconds',
    help: 'Time for one group-committed batch to be appended and made durable.',
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  const eventsAppended = new Counter({
    name: 'inventory_events_appended_total',
    help: 'Events appended to the log by this process, by event type.',
    labelNames: ['type'] as const,
    registers: [registry],
  });
  const faults = new Counter({
    name: 'inventory_storage_faults_total',
    help: 'Requests answered 503 because of the store: contention (the write lock held too long, or other writers kept coming first), storage (disk full, read-only, I/O, connection lost) or other.',
    labelNames: ['kind'] as const,
    registers: [registry],
  });
  for (const kind of FAULT_KINDS) faults.labels(kind).inc(0);
  const renders = new Counter({
    name: 'inventory_list_renders_total',
    help: 'Times the GET /v1/inventory body was rendered from the store (after a change).',
    registers: [registry],
  });
  const hits = new Counter({
    name: 'inventory_list_cache_hits_total',
    help: 'GET /v1/inventory requests answered without a render of their own: from the body held in memory, or sharing a render under way.',
    registers: [registry],
  });
  const aborts = new Counter({
    name: 'inventory_client_aborts_total',
    help: 'Answers cut short because the client went away (its connection reset or closed) before they were sent.',
    registers: [registry],
  });
  const idempotentAnswers = new Counter({
    name: 'inventory_idempotency_requests_total',
    help: 'PATCHes with an Idempotency-Key whose key was used already: replayed (the stored answer given again, nothing appended), reused (422: another request) or in_flight (409).',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  // Each store's own gauges only: a gauge that is always 0 would read as a fact.
  const wal = () => {
    const shown = store.diagnostics();
    return shown.store === 'sqlite' ? shown.wal : undefined;
  };
  const shown = store.diagnostics();
  if (shown.store === 'sqlite' && shown.wal !== undefined) {
    new Gauge({
      name: 'inventory_wal_bytes',
      help: "Size of SQLite's write-ahead log file.",
      registers: [registry],
      collect() {
        const status = wal();
        if (status) this.set(status.walBytes);
      },
    });
    new Gauge({
      name: 'inventory_oldest_reader_seconds',
      help: "For how long a read transaction (an auditor's shell, a backup) has held SQLite's checkpoints back; 0 when none does.",
      registers: [registry],
      collect() {
        const status = wal();
        if (status) this.set((status.walCheckpointBlockedForMs ?? 0) / 1000);
      },
    });
  }
  if (shown.store === 'postgres') {
    new Gauge({
      name: 'inventory_db_pool_connections',
      help: "PostgreSQL: the connection pool's connections by state (in_use, idle) and the queries waiting for one (waiting).",
      labelNames: ['state'] as const,
      registers: [registry],
      collect() {
        const shownNow = store.diagnostics();
        if (shownNow.store !== 'postgres') return;
        const { pool } = shownNow;
        this.labels('in_use').set(pool.total - pool.idle);
        this.labels('idle').set(pool.idle);
        this.labels('waiting').set(pool.waiting);
      },
    });
  }

  /** A scrape waits this long at most for the count. */
  const COUNT_WITHIN_MS = 1_000;
  // Last: its count is a query, which must not be what the pool gauge sees waiting.
  const records = store.idempotency;
  if (records) {
    new Gauge({
      name: 'inventory_idempotency_records',
      help: 'Stored answers of requests with an Idempotency-Key, expired ones not yet removed included.',
      registers: [registry],
      async collect() {
        // While the database is unavailable (or stops answering) the page is needed most:
        // the gauge keeps its last value rather than failing or holding up the scrape.
        try {
          this.set(await within(records.count(), Date.now() + COUNT_WITHIN_MS));
        } catch (error) {
          if (!(error instanceof DeadlinePassed) && !store.fault(error)) throw error;
        }
      },
    });
  }
  // The histogram's child per label set, found without building and sorting a label
  // key on every request (the label values come from small fixed sets).
  const children = new Map<string, ReturnType<typeof requestDuration.labels>>();
  const answered = (method: string, route: string, res: ServerResponse, started: number) => {
    // A change feed stream lasts as long as its reader follows: not a latency.
    if (String(res.getHeader('Content-Type') ?? '').startsWith('text/event-stream')) return;
    // A client that went away before its answer got no status.
    const status = res.headersSent ? String(res.statusCode) : 'none';
    const seconds = (performance.now() - started) / 1000;
    const key = `${method} ${status} ${route}`;
    let child = children.get(key);
    if (!child) {
      child = requestDuration.labels({ method, route, status });
      children.set(key, child);
    }
    child.observe(seconds);
  };
  return {
    registry,
    answered,
    committed(submissions, seconds, eventTypes) {
      batchSize.observe(submissions);
      commitDuration.observe(seconds);
      for (const type of eventTypes) eventsAppended.labels(type).inc();
    },
    unavailable: (error) => faults.labels(faultKind(error, store.fault)).inc(),
    listRendered: () => renders.inc(),
    listServedFromCache: () => hits.inc(),
    clientAborted: () => aborts.inc(),
    idempotency: (outcome) => idempotentAnswers.labels(outcome).inc(),
  };
}
