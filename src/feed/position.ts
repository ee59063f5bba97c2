// The feed's query: where to start (after, or Last-Event-ID for a stream that
// reconnects) and how much a page holds. Positions are seqs: canonical decimal digits,
// 0 to int64 max, kept as BigInt so that no digit is lost.
import { HttpError } from '../http/errors.ts';

export const DEFAULT_LIMIT = 100;
export const MAX_LIMIT = 1000;
const INT64_MAX = 9223372036854775807n;
const PARAMETERS = new Set(['after', 'limit']);

function seqOf(text: string, name: string): bigint {
  if (!/^(0|[1-9][0-9]{0,18})$/.test(text) || BigInt(text) > INT64_MAX) {
    throw new HttpError(400, 'bad_request', `${name} must be a seq: decimal digits from 0 to ${INT64_MAX}, not ${JSON.stringify(text)}`);
  }
  return BigInt(text);
}

export interface FeedQuery {
  after: bigint;
  limit: number;
}

/** query: the parsed query string (Koa's ctx.query); lastEventId: the header, if sent. */
export function readFeedQuery(query: Record<string, string | string[] | undefined>, lastEventId: string | undefined): FeedQuery {
  for (const [name, value] of Object.entries(query)) {
    if (!PARAMETERS.has(name))
      throw new HttpError(400, 'bad_request', `unknown query parameter ${JSON.stringify(name)}: only after and limit`);
    if (Array.isArray(value)) throw new HttpError(400, 'bad_request', `${name} is given more than once`);
  }
  const after = query.after as string | undefined;
  const limit = query.limit as string | undefined;
  let pageLimit = DEFAULT_LIMIT;
  if (limit !== undefined) {
    if (!/^[1-9][0-9]{0,3}$/.test(limit) || Number(limit) > MAX_LIMIT) {
      throw new HttpError(400, 'bad_request', `limit must be an integer from 1 to ${MAX_LIMIT}, not ${JSON.stringify(limit)}`);
    }
    pageLimit = Number(limit);
  }
  // A reconnecting stream's Last-Event-ID is where it really is; after is where it began.
  const start = lastEventId !== undefined ? seqOf(lastEventId.trim(), 'Last-Event-ID') : after !== undefined ? seqOf(after, 'after') : 0n;
  return { after: start, limit: pageLimit };
}
