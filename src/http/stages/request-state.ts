// What the stages in front of the router leave on a request, typed: Koa's ctx.state is
// declared with these members (the observe stage sets requestId, authentication the
// actor and its key, the body stage the body as read), and the accessors below give a
// route what it relies on, or fail loudly if the stage that sets it did not run.
import type { Context } from 'koa';
import type { ReadBody } from '../input/body.ts';

declare module 'koa' {
  interface DefaultState {
    /** The request's id (observe.ts), on every request. */
    requestId?: string;
    /** The key's name, once authenticated (auth.ts): the actor of what the request causes. */
    actor?: string;
    /** The verified key itself, once authenticated. */
    credential?: string;
    /** The body as read (body.ts), on the routes that read one. */
    body?: ReadBody;
  }
}

function present<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(`${what} is not on the request: the stage that sets it did not run`);
  return value;
}

/** The authenticated key's name; only behind authentication. */
export const actorOf = (ctx: Context): string => present(ctx.state.actor, 'the actor');

/** The verified key; only behind authentication. */
export const credentialOf = (ctx: Context): string => present(ctx.state.credential, 'the credential');

/** The request's id; set on every request before the router. */
export const requestIdOf = (ctx: Context): string => present(ctx.state.requestId, 'the request id');

/** The body as read; only on the routes that read one. */
export const bodyOf = (ctx: Context): ReadBody => present(ctx.state.body, 'the body');
