// A router's allowedMethods, with OPTIONS answered as RFC 9110 9.3.7 expects: 204 and an
// Allow that names every method of the path, OPTIONS itself included. (@koa/router
// answers 200 and leaves OPTIONS out.) 405 and 501 stay the router's, but their Allow
// lists OPTIONS too (RFC 9110 15.5.6: every method the path supports), and every Allow
// comes in one order, the documented one: GET, HEAD, the other methods, OPTIONS.
import type Router from '@koa/router';
import type { Middleware } from 'koa';

const ORDER = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];

export function allowedMethods(router: Router): Middleware {
  const allowed = router.allowedMethods() as unknown as Middleware;
  return async function answerOptions(ctx, next) {
    await allowed(ctx, next);
    const allow = ctx.response.get('Allow') as string | undefined;
    if (!allow) return;
    ctx.set('Allow', allowHeader(allow.split(/,\s*/)));
    if (ctx.method !== 'OPTIONS' || ctx.status !== 200) return;
    ctx.status = 204;
    ctx.body = null;
  };
}

/** Allow's value for these methods: in the documented order, OPTIONS last. */
export function allowHeader(methods: readonly string[]): string {
  const rank = (m: string) => (ORDER.includes(m) ? ORDER.indexOf(m) : ORDER.length);
  const others = [...new Set(methods)].filter((m) => m !== 'OPTIONS' && m !== '');
  return [...others.sort((a, b) => rank(a) - rank(b)), 'OPTIONS'].join(', ');
}
