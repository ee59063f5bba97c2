// RFC 9112 section 3.2: a request without Host (HTTP/1.1), with more than one Host, or
// with a Host that is not a host and an optional port is refused with 400. Node would
// answer a missing one bare and joins several into one value; here each gets the Error
// shape and a request id, before authentication, as a request that is not valid HTTP.
import { isIPv6 } from 'node:net';
import type { Middleware } from 'koa';
import { HttpError } from './errors.ts';

// RFC 3986 reg-name (an IPv4 address is one too), then an optional port.
const REG_NAME_AND_PORT = /^(?:[A-Za-z0-9\-._~!$&'()*+,;=]|%[0-9A-Fa-f]{2})+(?::[0-9]*)?$/;
// RFC 3986 IP-literal (IPv6, or IPvFuture), then an optional port.
const IP_LITERAL_AND_PORT = /^\[([^\]]*)\](?::[0-9]*)?$/;
const IP_FUTURE = /^v[0-9A-Fa-f]+\.[A-Za-z0-9\-._~!$&'()*+,;=:]+$/;

/** Whether value is RFC 3986 host [":" port]; empty too, as a request whose target has no
 * authority sends it (RFC 9112 section 3.2). */
function isHostValue(value: string): boolean {
  if (value === '' || REG_NAME_AND_PORT.test(value)) return true;
  const literal = IP_LITERAL_AND_PORT.exec(value)?.[1];
  return literal !== undefined && (isIPv6(literal) || IP_FUTURE.test(literal));
}

/** How many Host lines the request has: Node joins them into one value. */
function hostLines(rawHeaders: readonly string[]): number {
  let count = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    // Only a name of four letters is lowered: no copy of every other name on every request.
    const name = rawHeaders[i]!;
    if (name.length === 4 && name.toLowerCase() === 'host') count++;
  }
  return count;
}

export function requireHost(): Middleware {
  return function checkHost(ctx, next) {
    const { httpVersionMajor, httpVersionMinor, headers, rawHeaders } = ctx.req;
    const host = headers.host;
    if (host === undefined) {
      if (httpVersionMajor === 1 && httpVersionMinor >= 1)
        throw new HttpError(400, 'bad_request', 'an HTTP/1.1 request needs a Host header');
      return next();
    }
    if (hostLines(rawHeaders) > 1) throw new HttpError(400, 'bad_request', 'a request has one Host header, not several');
    if (!isHostValue(host)) {
      throw new HttpError(
        400,
        'bad_request',
        'the Host header is not a host name or address with an optional port (such as inventory.example:8080)',
      );
    }
    return next();
  };
}
