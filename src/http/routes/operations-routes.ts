// What operators and tools reach without a key: the OpenAPI document, liveness,
// readiness (the database answers and can take writes, and we are not shutting down)
// and the metrics. The document describes all but the metrics (Prometheus' own format).
import type { Registry } from 'prom-client';
import type { StorageHealth } from '../../application/health/storage-health.ts';
import { HttpError } from '../stages/errors.ts';
import type { Route } from './router.ts';

export interface OperationsDeps {
  storage: StorageHealth;
  openapiText: string;
  /** False once the service is shutting down. */
  accepting: () => boolean;
  metrics: Registry;
}

export function operationsRoutes({ storage, openapiText, accepting, metrics }: OperationsDeps): Route[] {
  const open = (template: string, handler: Route['handler'], operation?: string): Route => ({
    method: 'GET',
    template,
    ...(operation === undefined ? {} : { operation }),
    handler,
  });
  return [
    open('/openapi.json', () => ({ type: 'application/json', body: openapiText }), 'getOpenApi'),
    open('/healthz', () => ({ body: { status: 'ok' } }), 'getHealth'),
    open(
      '/readyz',
      async () => {
        if (!accepting()) throw new HttpError(503, 'unavailable', 'the service is shutting down');
        const problem = await storage.problem();
        if (problem) throw new HttpError(503, 'unavailable', problem);
        // SQLite: the log's size and how long a reader has held checkpoints back: a long-open
        // read transaction (an auditor's shell) is visible here before the log fills the disk.
        // PostgreSQL: the pool, the notification connection, and the last commit seen.
        const status = storage.status();
        return { body: status ? { status: 'ok', storage: status } : { status: 'ok' } };
      },
      'getReadiness',
    ),
    open('/metrics', async () => ({ headers: { 'Cache-Control': 'no-store' }, type: metrics.contentType, body: await metrics.metrics() })),
  ];
}
