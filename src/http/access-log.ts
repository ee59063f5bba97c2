// One log line per request, written when the response is finished (or the client went
// away), so it carries the final status. Only these fields: no headers, no query, no body.
// The observe stage (observe.ts) writes it.
import type { ServerResponse } from 'node:http';
import type { Logger } from '../support/logger.ts';

interface AccessLine {
  requestId: unknown;
  actor: unknown;
  method: string;
  path: string;
  status?: number | null;
  durationMs?: number;
  aborted?: true;
}

/** Logs the line of a request whose res has closed; started: performance.now() at its
 * start; line: its first fields (the rest are added to it). */
export function logAnswer(logger: Logger, res: ServerResponse, started: number, line: AccessLine): void {
  // A client that went away before the answer got none: no status to report.
  line.status = res.headersSent ? res.statusCode : null;
  line.durationMs = Math.round((performance.now() - started) * 1000) / 1000;
  if (!res.writableFinished) line.aborted = true;
  logger.info(line);
}
