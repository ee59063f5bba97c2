// What operators and tools reach without a key: the OpenAPI document, liveness and
// readiness.
import Router from '@koa/router';
import type Database from 'better-sqlite3';
import { HttpError } from './errors.ts';

export interface OperationsDeps {
  db: Database.Database;
  openapiText: string;
  /** False once the service is shutting down. */
  accepting: () => boolean;
}

export function operationsRouter({ db, openapiText, accepting }: OperationsDeps): Router {
  const router = new Router({ sensitive: true });
  const ping = db.prepare('SELECT 1').pluck();

  router.get('/openapi.json', (ctx) => {
    ctx.type = 'application/json';
    ctx.body = openapiText;
  });
  router.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  router.get('/readyz', (ctx) => {
    if (!accepting()) throw new HttpError(503, 'unavailable', 'the service is shutting down');
    try {
      ping.get();
    } catch {
      throw new HttpError(503, 'unavailable', 'the database does not answer');
    }
    ctx.body = { status: 'ok' };
  });
  return router;
}
