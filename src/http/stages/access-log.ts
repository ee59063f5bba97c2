// One log line per request, written when the response is finished (or the client went
// away), so it carries the final status. Only these fields: no headers, no query, no body.
// The observe stage (observe.ts) writes it.
// The line is the one pino writes for logger.info(fields), but put together here: it is
// the one line every request writes, and pino's walk over a fields object of any shape
// costs every GET more than these four known fields do. It goes to the logger's own
// stream, with its timestamp and bindings (pino.symbols), and only while the logger's
// level lets info lines through.
import type { ServerResponse } from 'node:http';
import pino from 'pino';
import type { Logger } from '../../support/logger.ts';

interface AccessLine {
  requestId: string;
  actor: string | undefined;
  method: string;
  path: string;
}

/** pino's number for info lines. */
const INFO = 30;

/** Writes the line of a request whose res has closed; started: performance.now() at its start. */
export type AccessLog = (res: ServerResponse, started: number, line: AccessLine) => void;

/** The access log of logger (the fields of its root or child, its stream, its clock). */
export function accessLog(logger: Logger): AccessLog {
  const internals = logger as unknown as Record<symbol, unknown>;
  const stream = internals[pino.symbols.streamSym] as pino.DestinationStream & Record<symbol, unknown>;
  // A stream that wants to be told each line's level (pino.multistream) gets the line
  // from pino itself.
  if (stream[pino.symbols.needsMetadataGsym]) {
    return (res, started, line) => {
      const { status, durationMs, aborted } = outcome(res, started);
      logger.info({ ...line, status, durationMs, ...(aborted ? { aborted } : {}) });
    };
  }
  const time = internals[pino.symbols.timeSym] as () => string;
  const bindings = internals[pino.symbols.chindingsSym] as string;
  return (res, started, line) => {
    if (!logger.isLevelEnabled('info')) return;
    const { status, durationMs, aborted } = outcome(res, started);
    const actor = line.actor === undefined ? '' : `,"actor":${jsonString(line.actor)}`;
    stream.write(
      `{"level":${INFO}${time()}${bindings},"requestId":${jsonString(line.requestId)}${actor},"method":${jsonString(line.method)},"path":${jsonString(line.path)},"status":${status},"durationMs":${durationMs}${aborted ? ',"aborted":true' : ''}}\n`,
    );
  };
}

/** Printable ASCII but the quote and the backslash: what JSON writes as it is. */
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

/** A string as JSON: in quotes as it is when nothing in it needs escaping (every
 * request id and method, and the paths of the routes), since testing its characters
 * costs every line less than JSON.stringify does; escaped as pino would otherwise. */
function jsonString(text: string): string {
  return PLAIN.test(text) ? `"${text}"` : JSON.stringify(text);
}

/** What the line says of the answer. */
function outcome(res: ServerResponse, started: number) {
  return {
    // A client that went away before the answer got none: no status to report.
    status: res.headersSent ? res.statusCode : null,
    durationMs: Math.round((performance.now() - started) * 1000) / 1000,
    aborted: !res.writableFinished,
  };
}
