// The answers to requests that never reach Koa, in the Error shape instead of Node's
// bare ones: a request Node's parser refused (unparseable, too slow, headers too large),
// an Expect other than 100-continue, a CONNECT, a body cut short that the parser let pass.
import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { ErrorCode } from '../stages/errors.ts';

/** Each connection's latest request, while its body may still be refused by the parser. */
export type RequestsBeingRead = WeakMap<Duplex, { req: IncomingMessage; res: ServerResponse }>;

function refusalOf(err: { code?: string | undefined }): [number, ErrorCode, string] {
  switch (err.code) {
    case 'HPE_HEADER_OVERFLOW':
      return [431, 'headers_too_large', 'the request headers are too large'];
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return [408, 'request_timeout', 'the request did not arrive in time'];
    default:
      return [400, 'bad_request', 'the request is not valid HTTP/1.1'];
  }
}

/** Writes an answer in the Error shape straight onto a socket (no request object). */
function answerOnSocket(socket: Duplex, status: number, code: ErrorCode, message: string): void {
  const body = JSON.stringify({ code, message, status });
  // No request was read, so no X-Request-Id of the client's: a new one, as always.
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `X-Request-Id: ${randomUUID()}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
  // Node's server sockets allow half-open connections: ended, this one would wait for
  // the client's FIN for ever, and a client that never sends one would hold it open
  // (no timeout covers a connection that has no request). Closed once the answer is
  // handed to the kernel, which still delivers it; an answer the client does not take
  // stays waiting on the socket, where the stall guard sees it.
  socket.once('finish', () => socket.destroy());
}

/**
 * Answers a request that was handed to the app, whose body Node's parser then refused,
 * through its own response: its access log line and its metrics, written when that
 * response closes, then show the 400 the client got, and the app's own answer, coming
 * later, finds the response ended. Its request id stays the one the app logs.
 */
function answerOnResponse(res: ServerResponse, status: number, code: ErrorCode, message: string): void {
  // The app's request id (observe set it on res), else a new one.
  const requestId = res.getHeader('x-request-id') ?? randomUUID();
  for (const name of res.getHeaderNames()) res.removeHeader(name);
  const body = JSON.stringify({ code, message, status });
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'X-Request-Id': requestId,
    'Content-Length': Buffer.byteLength(body),
    Connection: 'close',
  });
  res.end(body);
}

/** reading: the request of each connection that the app has, while its body arrives. */
export function answerOutsideKoa(server: Server, reading: RequestsBeingRead): void {
  // An Expect other than 100-continue: Node would answer a bare 417.
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    const body = JSON.stringify({ code: 'expectation_failed', message: 'only Expect: 100-continue is supported', status: 417 });
    res.writeHead(417, {
      'Content-Type': 'application/json; charset=utf-8',
      'Content-Length': Buffer.byteLength(body),
      'X-Request-Id': randomUUID(),
      Connection: 'close',
    });
    res.end(body);
    req.resume();
  });
  // CONNECT (a tunnel request) is not served; Node would just close the socket.
  server.on('connect', (_req: IncomingMessage, socket: Duplex) => {
    answerOnSocket(socket, 400, 'bad_request', 'CONNECT is not served here');
  });
  // A request that asks for an Upgrade is served as any other (the service upgrades to
  // nothing, as HTTP allows), but Node's parser then takes no notice of the client's FIN:
  // a body cut short by it would wait for the request timeout. It is refused as the
  // parser refuses any other body cut short. When the parser did refuse it, its answer
  // went out first: Node's own listener of the socket's end runs before this one.
  server.on('connection', (socket: Duplex) => {
    socket.on('end', () => {
      const current = reading.get(socket);
      if (current && !current.req.complete && !current.res.headersSent)
        answerOnResponse(current.res, ...refusalOf({ code: 'HPE_INVALID_EOF_STATE' }));
    });
  });
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex & { _httpMessage?: { headersSent?: boolean } }) => {
    // A response already under way, or a socket that is gone, cannot take an answer.
    if (err.code === 'ECONNRESET' || !socket.writable || socket._httpMessage?.headersSent) {
      socket.destroy();
      return;
    }
    const [status, code, message] = refusalOf(err);
    // The body of a request the app has (an unknown Transfer-Encoding, a bad chunk).
    const current = reading.get(socket);
    if (current && !current.req.complete && !current.res.headersSent) {
      answerOnResponse(current.res, status, code, message);
      return;
    }
    answerOnSocket(socket, status, code, message);
  });
}
