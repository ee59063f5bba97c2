// A router's allowedMethods, with OPTIONS answered as RFC 9110 9.3.7 expects: 204 and an
// Allow that names every method of the path, OPTIONS itself included. (@koa/router
// answers 200 and leaves OPTIONS out.) 405 and 501 stay the router's.
import type Router from '@koa/router';
import type { Middleware } from 'koa';

export function allowedMethods(router: Router): Middleware {
  const allowed = router.allowedMethods() as unknown as Middleware;
  return async function answerOptions(ctx, next) {
    await allowed(ctx, next);
    const allow = ctx.response.get('Allow');
    if (ctx.method !== 'OPTIONS' || ctx.status !== 200 || allow === '') return;
    ctx.status = 204;
    ctx.body = null;
    ctx.set('Allow', [...allow.split(/,\s*/).filter((m) => m !== 'OPTIONS'), 'OPTIONS'].join(', '));
  };
}
