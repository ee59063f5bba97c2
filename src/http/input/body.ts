// Reads a JSON request body: the media type first (415), then at most 4 KiB (413, also
// for a chunked body, which raw-body stops reading past the limit), then the bytes as
// strict UTF-8 and the text as JSON, read once by the strict reader (which sees what
// JSON.parse hides: a member named twice, a number as it was written). A body that is
// missing, not UTF-8 or not JSON is only recorded here: the path id is judged before
// the body.
import contentType from 'content-type';
import type { Context, Middleware } from 'koa';
import bodyParser from 'koa-bodyparser';
import { readStrictJson, type JsonNode } from '../../json/strict-json.ts';
import { HttpError } from '../stages/errors.ts';

/** The most a request body may hold (a PATCH's is a few bytes). */
export const BODY_LIMIT_BYTES = 4096;

export type ReadBody =
  | { kind: 'missing' }
  | { kind: 'malformed'; reason: string }
  /** One object names this member twice. */
  | { kind: 'duplicate'; member: string }
  /** Valid JSON with a member the parser refuses to build (__proto__). */
  | { kind: 'forbidden'; member: string }
  /** The value (numbers as JSON.parse would give them) and the text as read, numbers as written. */
  | { kind: 'parsed'; value: unknown; node: JsonNode };

const ACCEPT_PATCH = { 'Accept-Patch': 'application/json' };

function unsupported(message: string): HttpError {
  return new HttpError(415, 'unsupported_media_type', message, ACCEPT_PATCH);
}

export function jsonBody(limit = BODY_LIMIT_BYTES): Middleware {
  // The text reader hands over the bytes (encoding null) so that they are decoded here,
  // strictly: raw-body's own decoding would replace bytes that are not UTF-8 by U+FFFD
  // and so turn a corrupt body into a different, valid-looking one.
  const read = bodyParser({
    enableTypes: ['text'],
    extendTypes: { text: ['application/json'] },
    textLimit: `${limit}b`,
    encoding: null as unknown as string,
    onerror(err: Error & { status?: number }) {
      if (err.status === 413) {
        throw new HttpError(413, 'payload_too_large', `the body is larger than ${limit} bytes`);
      }
      if (err.status === 415) throw unsupported(`the body cannot be read: ${err.message}`);
      // A body that did not arrive whole (aborted, shorter than declared) is unreadable.
      throw new HttpError(400, 'bad_request', `the body could not be read: ${err.message}`);
    },
  });
  return async function readJsonBody(ctx, next) {
    const type = ctx.get('Content-Type');
    if (type === '') {
      if (await hasBody(ctx)) throw unsupported('a body needs Content-Type: application/json');
      ctx.state.body = { kind: 'missing' } satisfies ReadBody;
      await next();
      return;
    }
    judgeMediaType(type);
    await read(ctx, async () => {
      const raw: unknown = ctx.request.rawBody;
      const bytes = Buffer.isBuffer(raw) ? raw : Buffer.alloc(0);
      const text = decodeUtf8(bytes);
      ctx.request.rawBody = text ?? '';
      const body: ReadBody =
        bytes.length === 0
          ? { kind: 'missing' }
          : text === undefined
            ? { kind: 'malformed', reason: 'it is not valid UTF-8' }
            : parseJson(text);
      ctx.state.body = body;
      if (body.kind === 'parsed') ctx.request.body = body.value;
      await next();
    });
  };
}

/**
 * application/json, with at most one parameter, charset, whose value is utf-8 in any
 * case; anything else is a 415.
 */
function judgeMediaType(header: string): void {
  let parsed: contentType.ParsedMediaType;
  try {
    parsed = contentType.parse(header);
  } catch {
    throw unsupported('the Content-Type header is malformed');
  }
  if (parsed.type !== 'application/json') {
    throw unsupported(`Content-Type must be application/json, not ${parsed.type.slice(0, 100)}`);
  }
  for (const [name, value] of Object.entries(parsed.parameters)) {
    if (name !== 'charset') throw unsupported(`application/json takes no parameter but charset=utf-8; got ${name.slice(0, 40)}`);
    if (value.toLowerCase() !== 'utf-8') throw unsupported(`JSON is read as UTF-8 only, not charset ${value.slice(0, 40)}`);
  }
  // content-type keeps only the last of a repeated parameter. What passed above has one
  // parameter whose value is utf-8, which holds no ";" even when quoted: a second ";"
  // can only start a second parameter.
  if (header.split(';').length > 2) throw unsupported('application/json takes charset=utf-8 once at most');
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/** The text of UTF-8 bytes, a leading byte order mark dropped; undefined when not UTF-8. */
function decodeUtf8(bytes: Buffer): string | undefined {
  try {
    return UTF8.decode(bytes);
  } catch {
    return undefined;
  }
}

/** JSON text as a ReadBody. A __proto__ member anywhere is refused, not built. */
function parseJson(text: string): ReadBody {
  // The decoder dropped a leading byte order mark already: another is not JSON.
  const read = readStrictJson(text, { byteOrderMark: false });
  if (!read.ok)
    return read.problem === 'duplicate' ? { kind: 'duplicate', member: read.member } : { kind: 'malformed', reason: read.reason };
  const value = valueOf(read.value);
  return value === FORBIDDEN ? { kind: 'forbidden', member: '__proto__' } : { kind: 'parsed', value, node: read.value };
}

const FORBIDDEN = Symbol('__proto__');

/** The JavaScript value of a node, as JSON.parse builds it; FORBIDDEN for a __proto__ member anywhere. */
function valueOf(node: JsonNode): unknown {
  switch (node.kind) {
    case 'null':
      return null;
    case 'boolean':
    case 'string':
      return node.value;
    case 'number':
      // The same rounding as JSON.parse: the literal is a JSON number.
      return Number(node.literal);
    case 'array': {
      const items: unknown[] = [];
      for (const item of node.items) {
        const value = valueOf(item);
        if (value === FORBIDDEN) return FORBIDDEN;
        items.push(value);
      }
      return items;
    }
    case 'object': {
      const object: Record<string, unknown> = {};
      for (const [name, member] of node.members) {
        if (name === '__proto__') return FORBIDDEN;
        const value = valueOf(member);
        if (value === FORBIDDEN) return FORBIDDEN;
        object[name] = value;
      }
      return object;
    }
  }
}

/**
 * Whether a request without Content-Type carries a body. A declared length says so at
 * once; a chunked body may still be empty, which is a missing body (400), not a 415, so
 * its first chunk is awaited. The rest of it is left to flow away unread.
 */
function hasBody(ctx: Context): Promise<boolean> {
  const length = ctx.get('Content-Length');
  if (ctx.get('Transfer-Encoding') === '' || ctx.req.readableEnded) return Promise.resolve(Number(length || '0') > 0);
  const req = ctx.req;
  return new Promise((resolve, reject) => {
    const settle = (outcome: boolean | Error) => {
      req.off('data', onData).off('end', onEnd).off('error', onError).off('aborted', onError);
      if (outcome instanceof Error) reject(new HttpError(400, 'bad_request', `the body could not be read: ${outcome.message}`));
      else resolve(outcome);
    };
    const onData = () => settle(true);
    const onEnd = () => settle(false);
    const onError = (err?: Error) => settle(err ?? new Error('request aborted'));
    req.on('data', onData).on('end', onEnd).on('error', onError).on('aborted', onError);
  });
}
