// RFC 9112 section 3.2: an HTTP/1.1 request without Host is refused with 400. Node
// would do it with a bare answer; here it gets the Error shape and a request id, and
// comes before authentication, as a request that is not valid HTTP.
import type { Middleware } from 'koa';
import { HttpError } from './errors.ts';

export function requireHost(): Middleware {
  return function checkHost(ctx, next) {
    const { httpVersionMajor, httpVersionMinor } = ctx.req;
    if (httpVersionMajor === 1 && httpVersionMinor >= 1 && ctx.req.headers.host === undefined) {
      throw new HttpError(400, 'bad_request', 'an HTTP/1.1 request needs a Host header');
    }
    return next();
  };
}
