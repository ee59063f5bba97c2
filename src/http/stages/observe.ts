// The first stage of every request: its id (the client's X-Request-Id when it is a sane
// token), echoed on the answer; its access log line and its metrics, written once the
// response closes, labelled by the template of the route that serves its path.
import type { Context, Middleware } from 'koa';
import { accessLog } from './access-log.ts';
import { requestIdFor } from './request-id.ts';
import type { Logger } from '../../support/logger.ts';

/** What observe records of each request when its response closes. */
export interface Observer {
  answered(method: string, route: string, res: Context['res'], started: number): void;
}

/** The label of a path no route serves: a client's path is never a label value. */
const UNMATCHED = 'unmatched';
const METHODS = new Set(['GET', 'HEAD', 'PATCH', 'POST', 'PUT', 'DELETE', 'OPTIONS']);

/** templateOf: the template of the route serving the request's path, if any. */
export function observe(logger: Logger, metrics: Observer, templateOf: (ctx: Context) => string | undefined): Middleware {
  const logAnswer = accessLog(logger);
  return function observeRequest(ctx, next) {
    const started = performance.now();
    const { req, res } = ctx;
    const given = req.headers['x-request-id'];
    const id = requestIdFor(typeof given === 'string' ? given : undefined);
    ctx.state.requestId = id;
    res.setHeader('X-Request-Id', id);
    const method = req.method!;
    // A response closes once.
    res.on('close', () => {
      metrics.answered(METHODS.has(method) ? method : 'other', templateOf(ctx) ?? UNMATCHED, res, started);
      logAnswer(res, started, { requestId: id, actor: ctx.state.actor, method, path: ctx.request.path });
    });
    return next();
  };
}
