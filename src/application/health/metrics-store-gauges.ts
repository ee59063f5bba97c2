// The gauges read from the store when /metrics is scraped: SQLite's write-ahead log,
// PostgreSQL's pool, the idempotency records. Each store's own gauges only: a gauge
// that is always 0 would read as a fact.
import { Gauge, type Registry } from 'prom-client';
import { byDeadline } from '../write/deadline.ts';
import { DeadlinePassed, type StoreHealth } from '../../store/health.ts';
import type { InventoryStore } from '../../store/port.ts';

/** The store whose log and pool the gauges read when scraped. */
export type GaugedStore = Pick<StoreHealth, 'diagnostics' | 'fault'> & Partial<Pick<InventoryStore, 'idempotency'>>;

/** A scrape waits this long at most for the count. */
const COUNT_WITHIN_MS = 1_000;

function walGauges(registry: Registry, store: GaugedStore): void {
  const wal = () => {
    const shown = store.diagnostics();
    return shown.store === 'sqlite' ? shown.wal : undefined;
  };
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

function poolGauge(registry: Registry, store: GaugedStore): void {
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

function idempotencyGauge(registry: Registry, store: GaugedStore, records: NonNullable<GaugedStore['idempotency']>): void {
  new Gauge({
    name: 'inventory_idempotency_records',
    help: 'Stored answers of requests with an Idempotency-Key, expired ones not yet removed included.',
    registers: [registry],
    async collect() {
      // While the database is unavailable (or stops answering) the page is needed most:
      // the gauge keeps its last value rather than failing or holding up the scrape.
      try {
        this.set(await byDeadline(records.count(), Date.now() + COUNT_WITHIN_MS));
      } catch (error) {
        if (!(error instanceof DeadlinePassed) && !store.fault(error)) throw error;
      }
    },
  });
}

/** Registers the gauges this store has with registry. */
export function storeGauges(registry: Registry, store: GaugedStore): void {
  const shown = store.diagnostics();
  if (shown.store === 'sqlite' && shown.wal !== undefined) walGauges(registry, store);
  if (shown.store === 'postgres') poolGauge(registry, store);
  // Last: its count is a query, which must not be what the pool gauge sees waiting.
  if (store.idempotency) idempotencyGauge(registry, store, store.idempotency);
}
