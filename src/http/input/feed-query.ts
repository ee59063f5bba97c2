// The change feed's input, from the operation in the OpenAPI document, compiled once at
// start: whether it asks for the stream, where to start (after, or the Last-Event-ID of a
// stream that reconnects, a cursor of the same grammar) and how much a page holds. The
// router judges the query (only the document's parameters, each once) and gives the
// defaults the document states.
import type { Context } from 'koa';
import { FeedQueryInvalid } from '../../feed/errors.ts';
import { parseCursor, type Cursor } from '../../feed/position.ts';
import type { OpenApiDocument } from '../../openapi.ts';
import { wantsStream } from './accept.ts';
import type { InputRules, JudgedParameters } from './operation-input.ts';
import { operationParameters, parameterNamed, spoken, type Refusal } from './parameters.ts';
import { ruleOf } from './operation-input.ts';

const ROUTE = { method: 'GET', template: '/v1/events' };

/** What the feed's handler is asked for. */
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
  (schema: Record<string, unknown>): Refusal =>
  (_name, text) =>
    new FeedQueryInvalid(`limit must be ${ruleOf(schema)}, not ${JSON.stringify(text)}`);

/** A cursor the document's grammar accepts; one it accepts past what a seq holds is refused alike. */
function cursorOf(text: string, name: string): Cursor {
  const cursor = parseCursor(text);
  if (!cursor) throw notACursor(name, text);
  return cursor;
}

/** The feed's parameters as the document gives them, and how they are refused. */
export function feedRules(doc: OpenApiDocument): InputRules {
  const where = `${ROUTE.method} ${ROUTE.template}`;
  const limit = parameterNamed(operationParameters(doc, ROUTE), 'limit', where);
  return {
    refusals: { after: notACursor, limit: notALimit(limit.schema) },
    queryShape: {
      unknown: (name, names) => new FeedQueryInvalid(`unknown query parameter ${JSON.stringify(name)}: only ${spoken(names)}`),
      repeated: (name) => new FeedQueryInvalid(`${name} is given more than once`),
    },
  };
}

/** The feed's request made of the judged query (its defaults filled in by the router). */
export function feedInput(doc: OpenApiDocument): (parameters: JudgedParameters, ctx: Context) => FeedRequest {
  const where = `${ROUTE.method} ${ROUTE.template}`;
  const parameters = operationParameters(doc, ROUTE);
  const after = parameterNamed(parameters, 'after', where);
  const limit = parameterNamed(parameters, 'limit', where);
  if (after.schema.default === undefined || limit.schema.default === undefined) {
    throw new Error(`${where}: the document gives after or limit no default`);
  }
  /** A reconnecting stream's Last-Event-ID is where it really is; after is where it began. */
  const startOf = (ctx: Context, stream: boolean, given: string): Cursor => {
    // An empty one is absent, as EventSource means it; pages go by after (and Link) alone.
    const lastEventId = stream ? ctx.get('Last-Event-ID').trim() : '';
    if (lastEventId === '') return cursorOf(given, 'after');
    if (!after.check(lastEventId)) throw notACursor('Last-Event-ID', lastEventId);
    return cursorOf(lastEventId, 'Last-Event-ID');
  };
  return (judged, ctx) => {
    const stream = ctx.method === 'GET' && wantsStream(ctx.get('Accept'));
    return { stream, after: startOf(ctx, stream, judged.after!), limit: Number(judged.limit) };
  };
}
