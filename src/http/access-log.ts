// One log line per request, written when the response is finished (or the client went
// away), so it carries the final status. Only these fields: no headers, no query, no body.
import type { ServerResponse } from 'node:http';
import type { Middleware } from 'koa';
import type { Logger } from '../logger.ts';

export interface AccessLine {
  requestId: unknown;
  actor: unknown;
  method: string;
  path: string;
  status?: number | null;
  durationMs?: number;
  aborted?: true;
}

/** Logs the request's line once res closes; started: performance.now() at its start;
 * line: its first fields, as they are then (the rest are added to it). */
export function logWhenClosed(logger: Logger, res: ServerResponse, started: number, line: () => AccessLine): void {
  res.once('close', () => {
    const fields = line();
    // A client that went away before the answer got none: no status to report.
    fields.status = res.headersSent ? res.statusCode : null;
    fields.durationMs = Math.round((performance.now() - started) * 1000) / 1000;
    if (!res.writableFinished) fields.aborted = true;
    logger.info(fields);
  });
}

export function accessLog(logger: Logger): Middleware {
  return async function logRequest(ctx, next) {
    logWhenClosed(logger, ctx.res, performance.now(), () => ({
      requestId: ctx.state.requestId,
      actor: ctx.state.actor,
      method: ctx.method,
      path: ctx.path,
    }));
    await next();
  };
}
