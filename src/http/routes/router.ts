// The router: the route table declared on @koa/router, case-sensitive and exact (no
// trailing slash), each route's own stages (the body it reads, its parameters judged by
// its operation in the OpenAPI document and its handler's input made of them, then its
// handler) composed once at start. What no route answers is decided in one place, the
// router's NotFound event: a path no route serves is 404; a path served for other
// methods answers OPTIONS with 204 and Allow, and any other method with 405 and Allow.
// The stages every request takes before the router (request id and observation, the
// error boundary, Host, CORS, authentication under /v1) are wired by the app.
import Router, { RouterEvents, type Layer, type RouterContext } from '@koa/router';
import compose from 'koa-compose';
import type { Context, Middleware } from 'koa';
import { HttpError } from '../stages/errors.ts';
import { allowHeader } from '../stages/options.ts';
import { operationJudge, type InputRules, type JudgedParameters } from '../input/operation-input.ts';
import type { OpenApiDocument } from '../../openapi.ts';

/** What a handler replies: written onto the response by the router. */
export interface Reply {
  /** 200 unless given. */
  status?: number;
  headers?: Record<string, string>;
  type?: string;
  /** An object is sent as JSON. Left out: no body (a 304). */
  body?: string | Buffer | object;
}

/** undefined: the handler answered on the response itself (a stream). */
type Answer = Reply | undefined | Promise<Reply | undefined>;
type Handler = (ctx: Context) => Answer;

export interface Route {
  method: 'GET' | 'PATCH';
  /** Exact, case-sensitive, no trailing slash; `:name` is one path segment, decoded. */
  template: string;
  /**
   * The operationId of the route in the OpenAPI document: the router judges the request's
   * query names and parameters by it before anything else of the route runs. Left out
   * only by the pages the document does not describe (the docs, the auditors' page).
   */
  operation?: string;
  /** How the route's parameters are refused, when not by their schemas' rules. */
  rules?: InputRules;
  /** What runs before the input is made: reading the body. */
  reads?: Middleware[];
  /** What runs between the input and the handler (fairness between keys). */
  stages?: Middleware[];
  /** The handler, or its typed input and the handler it is given to (withInput). */
  handler: Handler | TypedHandler;
}

/** A handler bound to its input: made of the judged parameters (and the request) before the
 * route's stages run, so a refusal there is answered before any of them. */
export interface TypedHandler {
  prepare: (ctx: Context, parameters: JudgedParameters) => () => Answer;
}

/** A handler given the input make builds of the judged parameters, typed as make types it. */
export function withInput<I>(
  make: (parameters: JudgedParameters, ctx: Context) => I,
  handler: (ctx: Context, input: I) => Answer,
): TypedHandler {
  return {
    prepare: (ctx, parameters) => {
      const input = make(parameters, ctx);
      return () => handler(ctx, input);
    },
  };
}

/** The router's middleware and what the stages in front of it may ask of the table. */
export interface Routing {
  routes: Middleware;
  /** The template of the routes serving the request's path, undefined when none does. */
  templateOf: (ctx: Context) => string | undefined;
  /** The path is served, but not for the request's method (a 405 once authenticated). */
  methodUnserved: (ctx: Context) => boolean;
}

/** Writes the handler's reply; a handler that replies at once costs no promise. */
function respond(handler: Handler): (ctx: Context) => Promise<void> | undefined {
  return (ctx) => {
    const reply = handler(ctx);
    if (reply instanceof Promise) return reply.then((r) => write(ctx, r));
    write(ctx, reply);
    return undefined;
  };
}

/** Writes a handler's reply onto the response; undefined: the handler answered itself. */
function write(ctx: Context, reply: Reply | undefined): void {
  if (reply === undefined) return;
  const { res } = ctx;
  const { status = 200, headers, body } = reply;
  // Through ctx.response, not ctx's aliases of it: an alias passes each value on with a
  // keyed store that V8 leaves to its runtime, on every answer.
  const { response } = ctx;
  response.status = status;
  // The values are strings already: set as they are, without ctx.set's arrays of
  // entries on every answer. A response already sent (a 400 for a body the parser
  // refused while the handler worked) takes none, as ctx.set would ignore them.
  if (headers && !res.headersSent) for (const name in headers) res.setHeader(name, headers[name]!);
  if (reply.type !== undefined) response.type = reply.type;
  if (body !== undefined) response.body = body;
}

/** A route's chain: its reads, its parameters judged and its input made, its stages, its
 * handler; a route with nothing but a handler is its handler, no compose around one function. */
function chainOf(route: Route, doc: OpenApiDocument): Middleware {
  const { handler, reads = [], stages = [] } = route;
  const judge = route.operation === undefined ? undefined : operationJudge(doc, { ...route, operation: route.operation }, route.rules);
  if (!('prepare' in handler)) {
    const answer = respond(handler);
    const around = reads.length + stages.length > 0;
    if (judge === undefined) return around ? compose([...reads, ...stages, answer]) : answer;
    const judged: Middleware = (ctx, next) => {
      judge(ctx);
      return next();
    };
    if (around) return compose([...reads, judged, ...stages, answer]);
    // Judged in the same call as the handler: the list's GET, the answer most requests
    // get, costs no promise more for it.
    return (ctx) => {
      judge(ctx);
      return answer(ctx);
    };
  }
  const after = compose(stages);
  const bound: Middleware = (ctx) => {
    const call = handler.prepare(ctx, judge ? judge(ctx) : {});
    return after(ctx, () => {
      const reply = call();
      return reply instanceof Promise ? reply.then((r) => write(ctx, r)) : (write(ctx, reply), Promise.resolve());
    });
  };
  return reads.length > 0 ? compose([...reads, bound]) : bound;
}

type Layers = readonly Layer[];

/** doc: the document whose operations judge the routes' input. */
export function makeRouter(routes: readonly Route[], doc: OpenApiDocument): Routing {
  const router = new Router({ sensitive: true, strict: true });
  const methods = new Map<string, string[]>();
  for (const route of routes) {
    router.register(route.template, [route.method], chainOf(route, doc));
    const served = route.method === 'GET' ? ['GET', 'HEAD'] : [route.method];
    methods.set(route.template, [...(methods.get(route.template) ?? []), ...served]);
  }
  const allow = new Map([...methods].map(([template, served]) => [template, allowHeader(served)]));

  const pathLayers = (ctx: Context): Layers => (ctx as RouterContext).matched ?? router.match(ctx.path, ctx.method).path;
  const templateOf = (ctx: Context) => pathLayers(ctx)[0]?.path as string | undefined;

  router.on(RouterEvents.NotFound, (ctx) => {
    const template = templateOf(ctx);
    if (template === undefined) {
      throw new HttpError(404, 'not_found', `no such resource: ${ctx.method} ${ctx.path.slice(0, 200)}`);
    }
    const allowed = allow.get(template)!;
    if (ctx.method !== 'OPTIONS') {
      throw new HttpError(405, 'method_not_allowed', `${ctx.method} is not allowed here; allowed: ${allowed}`, { Allow: allowed });
    }
    ctx.status = 204;
    ctx.set({ Allow: allowed });
  });

  return {
    routes: router.routes() as Middleware,
    templateOf,
    methodUnserved: (ctx) => {
      const template = templateOf(ctx);
      return template !== undefined && !methods.get(template)!.includes(ctx.method);
    },
  };
}

/** Runs stage for the paths under prefix (its case ignored, as a client may write it),
 * and skips it for every other path. */
export function underPrefix(prefix: string, stage: Middleware): Middleware {
  const n = prefix.length;
  return (ctx, next) => {
    const path = ctx.request.path;
    const under = path.slice(0, n).toLowerCase() === prefix && (path.length === n || path[n] === '/');
    return under ? (stage(ctx, next) as unknown) : next();
  };
}
