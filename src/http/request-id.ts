// Gives each request an id: the client's X-Request-Id when it is a sane token, a new
// UUID otherwise. Every response echoes it, and every event it causes stores it.
import { randomUUID } from 'node:crypto';
import type { Middleware } from 'koa';

const SANE = /^[A-Za-z0-9._:-]{1,128}$/;

export function requestId(): Middleware {
  return async function assignRequestId(ctx, next) {
    const given = ctx.get('X-Request-Id');
    const id = SANE.test(given) ? given : randomUUID();
    ctx.state.requestId = id;
    ctx.set('X-Request-Id', id);
    await next();
  };
}
