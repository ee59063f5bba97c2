// The one road every request takes. A route table (method, template, authentication,
// body, handler) is turned at start into one composed chain per route, and per path
// into the chains of its other answers (OPTIONS, 405), plus two for paths no route
// serves (404, under /v1 and elsewhere). A request is matched once, first, and runs the
// chain of its match: observe (request id, access log line, metrics labelled by the
// template) -> the error boundary -> Host -> CORS (when configured) -> authentication
// (under /v1) -> the body and its validation (a PATCH) -> the handler. A stage a route
// does not need is not in its chain, and a stage added here is in every chain.
//
// The table matches paths itself rather than through @koa/router: with one table and
// one parameter, an exact lookup and one regular expression say as much as five routers
// did, and a miss is known at the match instead of being read back from the status.
import compose from 'koa-compose';
import type { Context, Middleware } from 'koa';
import { logAnswer } from './access-log.ts';
import { HttpError } from './errors.ts';
import { allowHeader } from './options.ts';
import { requestIdFor } from './request-id.ts';
import type { Logger } from '../support/logger.ts';

/** What a handler answers: written onto the response by the road. */
export interface Answer {
  /** 200 unless given. */
  status?: number;
  headers?: Record<string, string>;
  type?: string;
  /** An object is sent as JSON. Left out: no body (a 304). */
  body?: string | Buffer | object;
}

/** undefined: the handler answered on the response itself (a stream). */
export type Handler = (ctx: Context) => Answer | undefined | Promise<Answer | undefined>;

export interface Route {
  method: 'GET' | 'PATCH';
  /** Exact, case-sensitive, no trailing slash; `:name` is one path segment, decoded. */
  template: string;
  /** A bearer key is required (every route under /v1). */
  auth: boolean;
  /** The body the route reads and validates before its handler runs. */
  body?: Middleware[];
  handler: Handler;
}

/** What a chain is built for: a route's template, or none for a path no route serves. */
export interface Match {
  template: string | undefined;
  /** Under /v1: authentication comes before any answer, a 404 included. */
  auth: boolean;
}

/** The stages every chain has, in order, before its own; each made for its match. */
export interface Stages {
  /** Outermost: sees the request first and its end last. */
  observe: (match: Match) => Middleware;
  /** Renders whatever the stages below it throw. */
  boundary: Middleware;
  /** Before authentication (Host, CORS). */
  front: ((match: Match) => Middleware | undefined)[];
  auth: Middleware;
}

type Chain = (ctx: Context) => Promise<unknown>;

interface PathChains {
  byMethod: Map<string, Chain>;
  options: Chain;
  notAllowed: Chain;
}

const V1 = '/v1';

function underV1(path: string): boolean {
  return path.length >= 3 && path.slice(0, 3).toLowerCase() === V1 && (path.length === 3 || path[3] === '/');
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** Writes the handler's answer; a handler that answers at once costs no promise. */
function respond(handler: Handler): Middleware {
  const write = (ctx: Context, answer: Answer | undefined) => {
    if (answer === undefined) return;
    ctx.status = answer.status ?? 200;
    if (answer.headers) ctx.set(answer.headers);
    if (answer.type !== undefined) ctx.type = answer.type;
    if (answer.body !== undefined) ctx.body = answer.body;
  };
  return (ctx) => {
    const answer = handler(ctx);
    if (answer instanceof Promise) return answer.then((a) => write(ctx, a));
    write(ctx, answer);
    return undefined;
  };
}

function notFound(ctx: Context): never {
  throw new HttpError(404, 'not_found', `no such resource: ${ctx.method} ${ctx.path.slice(0, 200)}`);
}

/**
 * The Koa middleware that is the whole app: matches the request and runs its chain. A
 * GET route answers HEAD too; OPTIONS is 204 with Allow; another method on a served
 * path is 405 with Allow; a path no route serves is 404.
 */
export function dispatcher(routes: readonly Route[], stages: Stages): Middleware {
  const chainOf = (match: Match, own: Middleware[]): Chain => {
    const front = stages.front.map((stage) => stage(match)).filter((s): s is Middleware => s !== undefined);
    return compose([stages.observe(match), stages.boundary, ...front, ...(match.auth ? [stages.auth] : []), ...own]) as Chain;
  };
  const byTemplate = new Map<string, Route[]>();
  for (const route of routes) byTemplate.set(route.template, [...(byTemplate.get(route.template) ?? []), route]);

  const statics = new Map<string, PathChains>();
  const params: { pattern: RegExp; names: string[]; chains: PathChains }[] = [];
  for (const [template, served] of byTemplate) {
    const match: Match = { template, auth: served[0]!.auth };
    const methods = served.flatMap((r) => (r.method === 'GET' ? ['GET', 'HEAD'] : [r.method]));
    const allow = allowHeader(methods);
    const byMethod = new Map<string, Chain>();
    for (const route of served) {
      const chain = chainOf(match, [...(route.body ?? []), respond(route.handler)]);
      byMethod.set(route.method, chain);
      if (route.method === 'GET') byMethod.set('HEAD', chain);
    }
    const chains: PathChains = {
      byMethod,
      options: chainOf(match, [respond(() => ({ status: 204, headers: { Allow: allow } }))]),
      notAllowed: chainOf(match, [
        (ctx) => {
          throw new HttpError(405, 'method_not_allowed', `${ctx.method} is not allowed here; allowed: ${allow}`, { Allow: allow });
        },
      ]),
    };
    const names: string[] = [];
    const source = template.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&').replace(/:(\w+)/g, (_, name: string) => {
      names.push(name);
      return '([^\\/]+)';
    });
    if (names.length === 0) statics.set(template, chains);
    else params.push({ pattern: new RegExp(`^${source}$`), names, chains });
  }
  const missV1 = chainOf({ template: undefined, auth: true }, [notFound]);
  const miss = chainOf({ template: undefined, auth: false }, [notFound]);

  return function dispatch(ctx: Context) {
    const path = ctx.path;
    let chains = statics.get(path);
    if (chains === undefined) {
      for (const candidate of params) {
        const found = candidate.pattern.exec(path);
        if (found === null) continue;
        const values: Record<string, string> = {};
        candidate.names.forEach((name, i) => (values[name] = safeDecode(found[i + 1]!)));
        ctx.state.params = values;
        chains = candidate.chains;
        break;
      }
    }
    if (chains === undefined) return underV1(path) ? missV1(ctx) : miss(ctx);
    const method = ctx.method;
    const chain = chains.byMethod.get(method) ?? (method === 'OPTIONS' ? chains.options : chains.notAllowed);
    // A method the path does not have is 405 for any valid key: the documented precedence
    // puts the method before the key's scope, so a read-only key is not told 403.
    if (chain === chains.notAllowed) ctx.state.methodNotAllowed = true;
    return chain(ctx);
  };
}

/** What observe records of each request when its response closes. */
export interface Observer {
  answered(method: string, route: string, res: Context['res'], started: number): void;
}

/** The label of a path no route serves: a client's path is never a label value. */
export const UNMATCHED = 'unmatched';
const METHODS = new Set(['GET', 'HEAD', 'PATCH', 'POST', 'PUT', 'DELETE', 'OPTIONS']);

/**
 * The first stage of every chain: the request's id (the client's X-Request-Id when it is
 * a sane token), echoed on the answer; its access log line and its metrics, written
 * once the response closes, labelled by the match's template.
 */
export function observe(logger: Logger, metrics: Observer): (match: Match) => Middleware {
  return ({ template }) => {
    const route = template ?? UNMATCHED;
    return function observeRequest(ctx, next) {
      const started = performance.now();
      const id = requestIdFor(ctx.get('X-Request-Id'));
      ctx.state.requestId = id;
      ctx.set('X-Request-Id', id);
      const method = ctx.method;
      const res = ctx.res;
      res.once('close', () => {
        metrics.answered(METHODS.has(method) ? method : 'other', route, res, started);
        logAnswer(logger, res, started, { requestId: id, actor: ctx.state.actor, method, path: ctx.path });
      });
      return next();
    };
  };
}
