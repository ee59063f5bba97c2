// The headers the stages in front of the routes give every answer (its request id, the
// CORS grant), held as name-value pairs until the answer is written. Node checks,
// lowercases and stores each header that setHeader is given, and checks it again when
// it writes the head; a head handed to writeHead whole, on a response with no header of
// its own, is checked once. So a reply marked whole (the list's: the answer most requests
// get) writes the held headers and its own in one writeHead (writeWhole), and every other answer puts the held ones on the
// response first (heldOnResponse), in the order they were given and before any header
// of its own: the error boundary's, the router's other replies and its 204, the CORS
// preflight, a stream, the answer to a body the parser refused (takeHeld).
import type { ServerResponse } from 'node:http';

const HELD = Symbol('held headers');
type Holding = ServerResponse & { [HELD]?: string[] | undefined };

/** Starts the headers held for res's answer with one. */
export function holdFirst(res: ServerResponse, name: string, value: string): void {
  (res as Holding)[HELD] = [name, value];
}

/** Adds a header to those held for res's answer (on res itself when none are held). */
export function hold(res: ServerResponse, name: string, value: string): void {
  const held = (res as Holding)[HELD];
  if (held) held.push(name, value);
  else res.setHeader(name, value);
}

/** The headers held for res's answer, no longer held: an answer written without them. */
export function takeHeld(res: ServerResponse): readonly string[] {
  const held = (res as Holding)[HELD] ?? [];
  (res as Holding)[HELD] = undefined;
  return held;
}

/** Puts the held headers on res, once, before the answer sets one of its own. */
export function heldOnResponse(res: ServerResponse): void {
  if ((res as Holding)[HELD] === undefined) return;
  const held = takeHeld(res);
  if (res.headersSent) return;
  for (let i = 0; i < held.length; i += 2) res.setHeader(held[i]!, held[i + 1]!);
}

/**
 * Writes a whole answer, the held headers first, in one writeHead: only while the
 * headers are held, res has none of its own and its client can be written to; else it
 * writes nothing, says false, and the answer takes the usual way. headers must name none
 * of the held ones.
 */
export function writeWhole(res: ServerResponse, status: number, headers: Readonly<Record<string, string>>, body: Buffer): boolean {
  const held = (res as Holding)[HELD];
  if (held === undefined || res.headersSent || res.getHeaderNames().length > 0) return false;
  // A client gone: the usual way writes nothing either (Koa's ctx.writable).
  if (res.writableEnded || (res.socket !== null && !res.socket.writable)) return false;
  (res as Holding)[HELD] = undefined;
  for (const name in headers) held.push(name, headers[name]!);
  held.push('Content-Length', String(body.length));
  res.writeHead(status, held);
  res.end(body);
  return true;
}
