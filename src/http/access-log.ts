// One log line per request, written when the response is finished (or the client went
// away), so it carries the final status. Only these fields: no headers, no query, no body.
import type { Middleware } from 'koa';
import type { Logger } from '../logger.ts';

export function accessLog(logger: Logger): Middleware {
  return async function logRequest(ctx, next) {
    const started = performance.now();
    ctx.res.once('close', () => {
      logger.info({
        requestId: ctx.state.requestId,
        actor: ctx.state.actor,
        method: ctx.method,
        path: ctx.path,
        // A client that went away before the answer got none: no status to report.
        status: ctx.res.headersSent ? ctx.res.statusCode : null,
        durationMs: Math.round((performance.now() - started) * 1000) / 1000,
        ...(ctx.res.writableFinished ? {} : { aborted: true }),
      });
    });
    await next();
  };
}
