// CORS for browser front ends on the origins CORS_ORIGINS names, and for no other.
// Each allowed origin is answered with itself (never "*"), no credentials mode (keys
// travel in Authorization, not cookies). A preflight from an allowed origin is answered
// here, before authentication: a browser never sends a key with one. Every other request
// goes on to authentication; its answer, an error included, keeps the headers set here,
// so that a browser can read a 401 or a 412. A preflight on a path that does not exist is
// answered as the path is, 404, and grants nothing. Every answer says Vary: Origin, since
// any of them may differ by origin: a cache must not give one origin's answer to another.
import cors from '@koa/cors';
import type { Context, Middleware } from 'koa';
import { HttpError } from './errors.ts';

/** Request headers a browser client may send (besides the CORS-safelisted ones). */
const CORS_REQUEST_HEADERS = [
  'Authorization',
  'Content-Type',
  'If-Match',
  'If-None-Match',
  'X-Request-Id',
  'Idempotency-Key',
  'Last-Event-ID',
];
/** Response headers a browser client may read (besides the CORS-safelisted ones). */
const CORS_EXPOSED_HEADERS = ['ETag', 'X-Request-Id', 'Idempotent-Replayed', 'Link', 'Log-Receipt'];

/** The first stage of every request while CORS is on: even an answer refused before the
 * CORS stage (a bad Host) or by it (a preflight on no path) varies by Origin. */
export const varyOnOrigin: Middleware = (ctx, next) => {
  // Usually the first Vary of the answer: set as it is, without parsing one.
  if (ctx.res.hasHeader('Vary')) ctx.vary('Origin');
  else ctx.res.setHeader('Vary', 'Origin');
  return next();
};

/** The CORS stage; served: whether a route serves the path. */
export function corsFor(origins: readonly string[], served: (ctx: Context) => boolean): Middleware {
  const allowed = new Set(origins);
  const grant = cors({
    origin: (ctx) => {
      const origin = ctx.req.headers.origin;
      return origin !== undefined && allowed.has(origin) ? origin : '';
    },
    allowMethods: ['GET', 'HEAD', 'PATCH'],
    allowHeaders: CORS_REQUEST_HEADERS,
    exposeHeaders: CORS_EXPOSED_HEADERS,
    credentials: false,
    // The error middleware renders errors without resetting headers; this keeps them on
    // errors that pass through anyway.
    keepHeadersOnError: true,
    // A browser may reuse a preflight answer for 10 minutes.
    maxAge: 600,
  });
  // A preflight on a path no route serves is refused as the path is: 404.
  return (ctx, next) => {
    const preflight = ctx.method === 'OPTIONS' && ctx.get('Origin') !== '' && ctx.get('Access-Control-Request-Method') !== '';
    if (preflight && !served(ctx)) throw new HttpError(404, 'not_found', `no such resource: ${ctx.method} ${ctx.path.slice(0, 200)}`);
    return grant(ctx, next) as Promise<void>;
  };
}
