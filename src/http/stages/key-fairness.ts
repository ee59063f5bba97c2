// Fair to every key: one key may have at most so many requests in flight on this
// instance, so that a client flooding proofs, pages or writes waits on itself, not on
// everyone else. Past the bound that key alone is answered 429 at once, before any work
// on the store; a request stops counting when its response closes (a stream, when it ends).
import type { Middleware } from 'koa';
import { HttpError } from './errors.ts';
import { actorOf } from './request-state.ts';

/** Behind authentication: ctx.state.actor names the key. */
export function keyFairness(maxInFlight: number): Middleware {
  const inFlight = new Map<string, number>();
  return function fairToEveryKey(ctx, next) {
    const key = actorOf(ctx);
    const held = inFlight.get(key) ?? 0;
    if (held >= maxInFlight)
      throw new HttpError(
        429,
        'too_many_requests',
        `this API key has ${maxInFlight} requests in flight on this instance, the most it may; send more once some are answered`,
        { 'Retry-After': '1' },
      );
    inFlight.set(key, held + 1);
    ctx.res.once('close', () => {
      const left = inFlight.get(key)! - 1;
      if (left === 0) inFlight.delete(key);
      else inFlight.set(key, left);
    });
    return next();
  };
}

/**
 * A stage for the routes whose reads may run on the event loop (SQLite's are synchronous):
 * they start on the next turn, so that the requests that arrived together are each
 * counted against their key's bound, and refused past it, before any of them reads.
 * Without it a flood of such reads from one key is read one after the other in the turn
 * that parsed them, and everyone else waits for all of them.
 */
export const readsOnNextTurn: Middleware = (_ctx, next) =>
  new Promise<void>((resolve) => setImmediate(resolve)).then(() => next() as Promise<void>);
