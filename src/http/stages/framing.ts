// A request's framing (RFC 9112 section 6), judged before any stage can answer it, and
// the rule that no answer leaves before its request has been read whole.
//
// Node's parser refuses most faulty framing itself (two Content-Lengths, an invalid one,
// Content-Length beside Transfer-Encoding, a bad chunk), but some only once it reads the
// body, after the request was handed over, and some not at all: Transfer-Encoding on an
// HTTP/1.0 request, and a coding before chunked (gzip, chunked) that it would pass on as
// if absent. Those are refused here, with the connection closed, since what follows the
// head cannot be told apart from the next request. A body that a route does not read is
// read and dropped before the route runs, and one a route left unread (an early refusal)
// before the answer goes out: a body that turns out badly framed is then refused by the
// parser, never answered with data.
import type { IncomingMessage } from 'node:http';
import type { Context, Middleware, Next } from 'koa';
import { HttpError } from './errors.ts';

const CLOSE = { Connection: 'close' };

function refused(message: string): HttpError {
  return new HttpError(400, 'bad_request', message, CLOSE);
}

/** Why req's framing is refused, undefined when HTTP/1.1 allows it. */
function framingProblem(req: IncomingMessage): HttpError | undefined {
  const encoding = req.headers['transfer-encoding'];
  if (encoding === undefined) return undefined;
  if (req.httpVersionMajor === 1 && req.httpVersionMinor === 0) return refused('Transfer-Encoding is not allowed in an HTTP/1.0 request');
  if (req.headers['content-length'] !== undefined) return refused('a request may not carry both Transfer-Encoding and Content-Length');
  // Node joins repeated Transfer-Encoding fields with ", ", as a list of codings is read.
  const codings = encoding.split(',').map((coding) => coding.trim().toLowerCase());
  if (codings.includes('')) return refused('Transfer-Encoding holds an empty coding');
  if (codings[codings.length - 1] !== 'chunked') return refused('the last transfer coding of a request must be chunked');
  const applied = codings.slice(0, -1);
  if (applied.includes('chunked')) return refused('a body may be chunked only once');
  if (applied.length > 0)
    return new HttpError(
      501,
      'not_implemented',
      `the service decodes no transfer coding but chunked, not ${applied[0]!.slice(0, 40)}`,
      CLOSE,
    );
  return undefined;
}

/** Whether req's head announces a body (a chunked one may still turn out empty). */
function announcesBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/** Reads req's body to its end and drops it; over limit bytes, a 413 and a closed connection. */
function readToEnd(req: IncomingMessage, limit: number): Promise<void> {
  if (req.complete || req.readableEnded) return Promise.resolve();
  return new Promise((resolve, reject) => {
    let read = 0;
    const settle = (error?: HttpError) => {
      req.off('data', onData).off('end', onEnd).off('error', onError).off('aborted', onError);
      if (error) {
        req.pause();
        reject(error);
      } else resolve();
    };
    const onData = (chunk: Buffer) => {
      read += chunk.length;
      if (read > limit) settle(new HttpError(413, 'payload_too_large', `the body is larger than ${limit} bytes`, CLOSE));
    };
    const onEnd = () => settle();
    // The parser refused the body: its answer (answers-outside-koa.ts) is already out.
    const onError = () => settle(refused('the body could not be read'));
    req.on('data', onData).on('end', onEnd).on('error', onError).on('aborted', onError);
    req.resume();
  });
}

/** The most a body that no route reads may hold: read and dropped, it is never looked at. */
const UNREAD_LIMIT_BYTES = 64 * 1024;

/**
 * The first stage behind the error boundary. readsBody: whether the request's route reads
 * its body itself (for the others it is read here first, up to 64 KiB); limit: the most
 * a route's body may hold.
 */
export function wholeRequests(readsBody: (ctx: Context) => boolean, limit: number): Middleware {
  const withBody = async (ctx: Context, next: Next): Promise<void> => {
    if (!readsBody(ctx)) {
      await readToEnd(ctx.req, UNREAD_LIMIT_BYTES);
      await next();
      return;
    }
    let failure = undefined as { error: unknown } | undefined;
    await next().catch((error: unknown) => {
      failure = { error };
    });
    // A body too long to read is not read on: the connection closes after the refusal.
    if (failure?.error instanceof HttpError && failure.error.status === 413) {
      ctx.set(CLOSE);
      throw failure.error;
    }
    // What the route left unread (it refused the request early), before Koa writes the
    // answer; past the limit, the route's refusal goes out and the connection closes.
    const unread = await readToEnd(ctx.req, limit).then(
      () => undefined,
      (error: HttpError) => error,
    );
    if (unread?.status === 413 && failure) {
      ctx.set(CLOSE);
      throw failure.error;
    }
    if (unread) throw unread;
    if (failure) throw failure.error;
  };
  // Most requests have no body: they pass on as they are, with no promise of this stage's.
  return function wholeRequest(ctx, next) {
    const problem = framingProblem(ctx.req);
    if (problem) throw problem;
    return announcesBody(ctx.req) ? withBody(ctx, next) : (next() as Promise<void>);
  };
}
