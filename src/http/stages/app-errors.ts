// What Koa hears after the error middleware is done with a request: a client that went
// away in the middle of its answer (the socket reset, the pipe broken), or a body stream
// that failed once its headers were sent. Each becomes one JSON log line, never Koa's
// default print of a raw stack on standard error. A client going away is no fault of
// ours and comes in floods under load: counted, logged at debug, at most one line a
// second with a count, like storage faults.
import type { Context } from 'koa';
import { repeatedWarnings, type Logger } from '../../support/logger.ts';

const CLIENT_ABORTS = new Set([
  'ECONNRESET',
  'EPIPE',
  'ECONNABORTED',
  'ERR_STREAM_PREMATURE_CLOSE',
  'ERR_STREAM_DESTROYED',
  'ERR_STREAM_WRITE_AFTER_END',
]);

export function appErrorLog(logger: Logger, { clientAborted }: { clientAborted: () => void }): (err: unknown, ctx?: Context) => void {
  const debugRepeated = repeatedWarnings(logger, { level: 'debug' });
  return (err, ctx) => {
    const e = err as { name?: unknown; message?: unknown; code?: unknown; stack?: unknown };
    if (typeof e?.code === 'string' && CLIENT_ABORTS.has(e.code)) {
      clientAborted();
      debugRepeated(`abort:${e.code}`, 1, { code: e.code }, 'a client went away before its answer was sent');
      return;
    }
    logger.error(
      { requestId: ctx?.state.requestId, err: { name: e?.name, message: e?.message, code: e?.code, stack: e?.stack } },
      'error after the answer began',
    );
  };
}
