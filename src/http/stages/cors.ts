// CORS for browser front ends on the origins CORS_ORIGINS names, and for no other.
// Each allowed origin is answered with itself (never "*"), no credentials mode (keys
// travel in Authorization, not cookies). Two stages:
// - the grant, first of all: every answer says Vary: Origin, since any of them may differ
//   by origin (a cache must not give one origin's answer to another), an answer refused
//   early (a bad Host) too; and an actual request from an allowed origin is granted, so
//   that its answer, an error included, keeps the headers and a browser can read a 400,
//   a 401 or a 412.
// - the preflight, after the Host check and before authentication (a browser never sends
//   a key with one): @koa/cors answers it. A preflight on a path that does not exist is
//   answered as the path is, 404, and grants nothing.
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

/** The two stages while CORS is on; served: whether a route serves the path. */
export function corsStages(origins: readonly string[], served: (ctx: Context) => boolean): { grant: Middleware; preflight: Middleware } {
  const allowed = new Set(origins);
  /** The request's Origin when it is one of the allowed ones. */
  const allowedOrigin = (ctx: Context) => {
    const origin = ctx.req.headers.origin;
    return origin !== undefined && allowed.has(origin) ? origin : undefined;
  };
  const exposed = CORS_EXPOSED_HEADERS.join(',');
  const answer = cors({
    origin: (ctx) => allowedOrigin(ctx) ?? '',
    allowMethods: ['GET', 'HEAD', 'PATCH'],
    allowHeaders: CORS_REQUEST_HEADERS,
    credentials: false,
    // A browser may reuse a preflight answer for 10 minutes.
    maxAge: 600,
  });
  return {
    // The first stage of every request. An actual request gets what @koa/cors gives one
    // (Access-Control-Allow-Origin and -Expose-Headers), set here without its promises,
    // since every request of a browser front end takes this path.
    grant: function corsGrant(ctx, next) {
      const { res } = ctx;
      // The first Vary of the answer: only observe's request id comes before it.
      res.setHeader('Vary', 'Origin');
      const origin = ctx.req.method === 'OPTIONS' ? undefined : allowedOrigin(ctx);
      if (origin !== undefined) {
        res.setHeader('Access-Control-Allow-Origin', origin);
        res.setHeader('Access-Control-Expose-Headers', exposed);
      }
      return next();
    },
    preflight: function corsPreflight(ctx, next) {
      // Every other method was granted (or not) by the grant.
      if (ctx.req.method !== 'OPTIONS') return next();
      const preflight = ctx.get('Origin') !== '' && ctx.get('Access-Control-Request-Method') !== '';
      // A preflight on a path no route serves is refused as the path is: 404.
      if (preflight && !served(ctx)) throw new HttpError(404, 'not_found', `no such resource: ${ctx.method} ${ctx.path.slice(0, 200)}`);
      return answer(ctx, next) as Promise<void>;
    },
  };
}
