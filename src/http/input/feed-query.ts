// The change feed's request, judged before its handler runs from the operation in the
// OpenAPI document, compiled once at start: whether it asks for the stream, where to start
// (after, or the Last-Event-ID of a stream that reconnects, a cursor of the same grammar)
// and how much a page holds. The query takes only the document's parameters, each once.
import type { Context, Middleware } from 'koa';
import { FeedQueryInvalid } from '../../feed/errors.ts';
import { parseCursor, type Cursor } from '../../feed/position.ts';
import type { OpenApiDocument } from '../../openapi.ts';
import { wantsStream } from './accept.ts';
import { parameterText, operationParameters, parameterNamed, queryShapeJudge, spoken, type Refusal } from './parameters.ts';

const ROUTE = { method: 'GET', template: '/v1/events' };

/** What the feed's handler is asked for, on ctx.state.feed. */
export interface FeedRequest {
  stream: boolean;
  after: Cursor;
  limit: number;
}

const notACursor: Refusal = (name, text) =>
  new FeedQueryInvalid(
    `${name} must be a seq (decimal digits without leading zeros, 0 to 9223372036854775807) or a digest SEQ:HASH, not ${JSON.stringify(text)}`,
  );

/** The limit's refusal, which says the bounds its schema gives. */
const notALimit =
  ({ minimum, maximum }: Record<string, unknown>): Refusal =>
  (_name, text) =>
    new FeedQueryInvalid(`limit must be an integer from ${String(minimum)} to ${String(maximum)}, not ${JSON.stringify(text)}`);

const queryShape = {
  unknown: (name: string, names: readonly string[]) =>
    new FeedQueryInvalid(`unknown query parameter ${JSON.stringify(name)}: only ${spoken(names)}`),
  repeated: (name: string) => new FeedQueryInvalid(`${name} is given more than once`),
};

/** A cursor the document's grammar accepts; one it accepts past what a seq holds is refused alike. */
function cursorOf(text: string, name: string): Cursor {
  const cursor = parseCursor(text);
  if (!cursor) throw notACursor(name, text);
  return cursor;
}

export function judgeFeedRequest(doc: OpenApiDocument): Middleware {
  const parameters = operationParameters(doc, ROUTE);
  const where = `${ROUTE.method} ${ROUTE.template}`;
  const after = parameterNamed(parameters, 'after', where);
  const limit = parameterNamed(parameters, 'limit', where);
  const shape = queryShapeJudge(parameters, queryShape);
  const defaults = { after: typeof after.schema.default === 'string' ? after.schema.default : '0', limit: Number(limit.schema.default) };
  const refuseLimit = notALimit(limit.schema);
  if (!Number.isInteger(defaults.limit)) throw new Error(`${where}: the document gives limit no default`);

  /** A reconnecting stream's Last-Event-ID is where it really is; after is where it began. */
  const startOf = (ctx: Context, stream: boolean): Cursor => {
    // An empty one is absent, as EventSource means it; pages go by after (and Link) alone.
    const lastEventId = stream ? ctx.get('Last-Event-ID').trim() : '';
    if (lastEventId === '') return cursorOf(parameterText(ctx, after, notACursor) ?? defaults.after, 'after');
    if (!after.check(lastEventId)) throw notACursor('Last-Event-ID', lastEventId);
    return cursorOf(lastEventId, 'Last-Event-ID');
  };

  return (ctx, next) => {
    const stream = ctx.method === 'GET' && wantsStream(ctx.get('Accept'));
    shape(ctx.query);
    const limitText = parameterText(ctx, limit, refuseLimit);
    const pageLimit = limitText === undefined ? defaults.limit : Number(limitText);
    ctx.state.feed = { stream, after: startOf(ctx, stream), limit: pageLimit } satisfies FeedRequest;
    return next();
  };
}
