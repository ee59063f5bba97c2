// What operators and tools reach without a key: the OpenAPI document, liveness,
// readiness (the database answers and can take writes, and we are not shutting down)
// and the metrics.
import Router from '@koa/router';
import type { Registry } from 'prom-client';
import type { StorageHealth } from '../storage-health.ts';
import { HttpError } from './errors.ts';

export interface OperationsDeps {
  storage: StorageHealth;
  openapiText: string;
  /** False once the service is shutting down. */
  accepting: () => boolean;
  metrics: Registry;
}

export function operationsRouter({ storage, openapiText, accepting, metrics }: OperationsDeps): Router {
  // strict: paths are exact, /healthz/ is not /healthz.
  const router = new Router({ sensitive: true, strict: true });

  router.get('/openapi.json', (ctx) => {
    ctx.type = 'application/json';
    ctx.body = openapiText;
  });
  router.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  router.get('/readyz', async (ctx) => {
    if (!accepting()) throw new HttpError(503, 'unavailable', 'the service is shutting down');
    const problem = await storage.problem();
    if (problem) throw new HttpError(503, 'unavailable', problem);
    // SQLite: the log's size and how long a reader has held checkpoints back: a long-open
    // read transaction (an auditor's shell) is visible here before the log fills the disk.
    // PostgreSQL: the pool, the notification connection, and the last commit seen.
    const status = storage.status();
    ctx.body = status ? { status: 'ok', storage: status } : { status: 'ok' };
  });
  router.get('/metrics', async (ctx) => {
    ctx.set('Cache-Control', 'no-store');
    ctx.type = metrics.contentType;
    ctx.body = await metrics.metrics();
  });
  return router;
}
