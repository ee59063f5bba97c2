// Bearer authentication (RFC 6750) for everything under /v1, unknown paths included, so
// that nothing is revealed to a client without a valid key (the app runs it before the
// router for those paths). The key's name becomes the actor of the events the request causes, and the
// verified key itself stays on ctx.state for the routes that need it (a change feed
// stream ends when it is revoked); a read-only key may use only the methods that change
// nothing.
import type { Context, Middleware, Next } from 'koa';
import { principalWithinBudget, type KeyCheckSource, type Principal } from '../../application/access/key-check.ts';
import type { Logger } from '../../support/logger.ts';
import { HttpError } from './errors.ts';

const REALM = 'Bearer realm="inventory"';
// RFC 6750 section 2.1: b64token
const TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;

/** The credential of an Authorization header: undefined for no Bearer scheme, '' for a
 * Bearer header without exactly one token after it. */
function bearerCredential(header: string): string | undefined {
  // The form every client sends, taken without splitting; anything else is parsed below.
  // ('Bearer ' alone is not it: trimmed, it differs.)
  if (header.startsWith('Bearer ') && header.indexOf(' ', 7) === -1 && header.trim() === header) return header.slice(7);
  const [scheme, ...rest] = header.trim().split(/ +/);
  if (scheme?.toLowerCase() !== 'bearer') return undefined;
  return rest.length === 1 ? rest[0]! : '';
}

/** Methods that change nothing, which a read-only key may use. */
const READING = new Set(['GET', 'HEAD', 'OPTIONS']);

/** logger: told of each key row the key log does not vouch for (never its hash);
 * methodUnserved: the request's path is served, but not for its method. */
export function bearerAuth(keys: KeyCheckSource, logger?: Logger, methodUnserved: (ctx: Context) => boolean = () => false): Middleware {
  keys.onDistrust?.((key, reason) =>
    logger?.warn({ keyName: key }, `API key "${key}" is refused: api_keys does not match the key log (${reason})`),
  );
  const admit = (ctx: Context, next: Next, token: string, principal: Principal | null | undefined) => {
    if (!principal) {
      throw new HttpError(401, 'unauthorized', 'the API key is not valid', {
        'WWW-Authenticate': `${REALM}, error="invalid_token"`,
      });
    }
    ctx.state.actor = principal.name;
    ctx.state.credential = token;
    // A method the path does not have is answered 405 after this, whatever the key may
    // do: the documented precedence puts the method before the key's scope.
    if (principal.scope !== 'read-write' && !READING.has(ctx.method) && !methodUnserved(ctx)) {
      throw new HttpError(403, 'forbidden', 'this API key is read-only: it may read but not change anything', {
        'WWW-Authenticate': 'Bearer error="insufficient_scope"',
      });
    }
    return next();
  };
  return function authenticate(ctx, next) {
    const token = bearerCredential(ctx.req.headers.authorization ?? '');
    if (token === undefined) {
      // No credential, or another scheme (Basic, …): RFC 6750 section 3.1 says no error code.
      throw new HttpError(401, 'unauthorized', 'an API key is required: send Authorization: Bearer <key>', {
        'WWW-Authenticate': REALM,
      });
    }
    // From memory when the store can tell at once (no promise, no wait); otherwise a
    // database that stops answering makes this a 503 within the request's budget.
    const known = TOKEN.test(token) ? keys.authenticateFromMemory(token) : null;
    if (known !== undefined) return admit(ctx, next, token, known);
    return principalWithinBudget(keys, token).then((principal) => admit(ctx, next, token, principal));
  };
}
