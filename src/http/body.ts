// Reads a JSON request body: the media type first (415), then at most 4 KiB (413, also
// for a chunked body, which raw-body stops reading past the limit). A body that is
// missing or not JSON is only recorded here: the path id is judged before the body.
import type { Middleware } from 'koa';
import bodyParser from 'koa-bodyparser';
import { HttpError } from './errors.ts';

export const BODY_LIMIT_BYTES = 4096;

export type ReadBody =
  | { kind: 'missing' }
  | { kind: 'malformed'; reason: string }
  /** Valid JSON with a member the parser refuses to build (__proto__). */
  | { kind: 'forbidden'; member: string }
  | { kind: 'parsed'; value: unknown };

// What the JSON parser (@hapi/bourne, under co-body) says of a __proto__ member.
const PROTOTYPE_POISONING = 'Object contains forbidden prototype property';

const ACCEPT_PATCH = { 'Accept-Patch': 'application/json' };

function unsupported(message: string): HttpError {
  return new HttpError(415, 'unsupported_media_type', message, ACCEPT_PATCH);
}

function mediaType(contentType: string): string {
  return (contentType.split(';')[0] ?? '').trim().toLowerCase();
}

// RFC 9110 section 8.3.1: type/subtype *( ";" name=value ), value a token or quoted.
const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+";
const WELL_FORMED = new RegExp(`^\\s*${TOKEN}/${TOKEN}\\s*(;\\s*${TOKEN}=(${TOKEN}|"([^"\\\\]|\\\\.)*")\\s*)*;?\\s*$`);

export function jsonBody(limit = BODY_LIMIT_BYTES): Middleware {
  const parse = bodyParser({
    enableTypes: ['json'],
    jsonLimit: `${limit}b`,
    strict: false,
    onerror(err: Error & { status?: number; type?: string }, ctx) {
      if (err.status === 413) {
        throw new HttpError(413, 'payload_too_large', `the body is larger than ${limit} bytes`);
      }
      if (err.status === 415) throw unsupported(`the body cannot be read: ${err.message}`);
      // Only a body that arrived whole but is not JSON is judged later, as a body fault;
      // one that did not arrive whole (aborted, shorter than declared) is unreadable.
      if (!(err instanceof SyntaxError)) throw new HttpError(400, 'bad_request', `the body could not be read: ${err.message}`);
      ctx.state.body = (
        err.message === PROTOTYPE_POISONING ? { kind: 'forbidden', member: '__proto__' } : { kind: 'malformed', reason: err.message }
      ) satisfies ReadBody;
    },
  });
  return async function readJsonBody(ctx, next) {
    const type = ctx.get('Content-Type');
    const hasBody = ctx.get('Transfer-Encoding') !== '' || Number(ctx.get('Content-Length') || '0') > 0;
    if (type === '') {
      if (hasBody) throw unsupported('a body needs Content-Type: application/json');
      ctx.state.body = { kind: 'missing' } satisfies ReadBody;
      return next();
    }
    if (!WELL_FORMED.test(type)) throw unsupported('the Content-Type header is malformed');
    if (mediaType(type) !== 'application/json') {
      throw unsupported(`Content-Type must be application/json, not ${mediaType(type).slice(0, 100)}`);
    }
    const charset = /;\s*charset\s*=\s*"?([^";\s]*)/i.exec(type)?.[1]?.toLowerCase();
    if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
      throw unsupported(`JSON is read as UTF-8 only, not charset ${charset.slice(0, 40)}`);
    }
    return parse(ctx, async () => {
      ctx.state.body ??= (ctx.request.rawBody ?? '') === ''
        ? ({ kind: 'missing' } satisfies ReadBody)
        : ({ kind: 'parsed', value: ctx.request.body } satisfies ReadBody);
      await next();
    });
  };
}
