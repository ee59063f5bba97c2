// The node:http server around the Koa app: limits against slow and greedy clients, and
// the Error shape for requests that never reach Koa (unparseable, too slow, headers too
// large), which clientError answers instead of Node's bare 400.
import { randomUUID } from 'node:crypto';
import { createServer, STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type Koa from 'koa';
import { repeatedWarnings, type Logger } from '../support/logger.ts';
import type { ErrorCode } from './errors.ts';
import { SlicedResponse } from './sliced-response.ts';
import { guardStalls } from './stall-guard.ts';

function answer(err: NodeJS.ErrnoException): [number, ErrorCode, string] {
  switch (err.code) {
    case 'HPE_HEADER_OVERFLOW':
      return [431, 'headers_too_large', 'the request headers are too large'];
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return [408, 'request_timeout', 'the request did not arrive in time'];
    default:
      return [400, 'bad_request', 'the request is not valid HTTP/1.1'];
  }
}

/** Limits against slow and greedy clients (a slow-loris holds sockets open for free). */
export interface ServerLimits {
  /** All request headers must arrive within this. */
  headersTimeoutMs: number;
  /** The whole request, body included, must arrive within this. */
  requestTimeoutMs: number;
  /** An idle keep-alive connection is closed after this. */
  keepAliveTimeoutMs: number;
  /** A keep-alive connection is closed after this many requests. */
  maxRequestsPerSocket: number;
  /** How often the timeouts above are checked (Node's default is 30 s). */
  checkIntervalMs: number;
  maxHeaderBytes: number;
  /**
   * A connection with response bytes waiting that takes none of them for this long is
   * closed: a client that never reads would otherwise pin them forever. Any byte taken
   * resets the clock, so slow readers are not cut off.
   */
  stallTimeoutMs: number;
  /**
   * The most that stalled connections may pin together; past it the connections stalled
   * longest are closed first. Checked every checkIntervalMs.
   */
  maxPinnedBytes: number;
}

export const DEFAULT_LIMITS: ServerLimits = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
  // 0: no count limit. Past a limit Node answers a bare 503 with no body of ours;
  // the keep-alive timeout already bounds what an idle connection holds.
  maxRequestsPerSocket: 0,
  checkIntervalMs: 1_000,
  maxHeaderBytes: 16 * 1024,
  stallTimeoutMs: 30_000,
  maxPinnedBytes: 128 * 1024 * 1024,
};

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

/** The server, and how it ends its connections at shutdown. */
export type ServiceServer = Server & {
  /**
   * From now on every answer carries `Connection: close` and its connection is closed
   * once it is sent; idle connections are closed at once. With close() the drain then
   * takes as long as the requests in flight, not a keep-alive client's whole stream.
   */
  drain(): void;
};

/** logger hears, at most once a second, of connections closed for not reading. */
export function createHttpServer(app: Koa, limits: ServerLimits = DEFAULT_LIMITS, logger?: Logger): ServiceServer {
  const handle = app.callback();
  // Each connection's latest request, while its body may still be refused by the parser.
  const reading = new WeakMap<Duplex, { req: IncomingMessage; res: ServerResponse }>();
  // Each connection's responses not yet sent, in order (more than one: pipelined requests).
  const pending = new Map<Duplex, ServerResponse[]>();
  let draining = false;
  /** The connection ends after res; one whose headers are sent is closed once it ends. */
  const lastOnConnection = (res: ServerResponse) => {
    if (!res.headersSent) res.shouldKeepAlive = false;
    else res.once('finish', () => setImmediate(() => server.closeIdleConnections()));
  };
  const server = createServer(
    {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      connectionsCheckingInterval: limits.checkIntervalMs,
      maxHeaderSize: limits.maxHeaderBytes,
      // Node would answer a missing Host with a bare 400; the app answers it (host.ts).
      requireHostHeader: false,
      // A large body goes out a slice at a time, so that many answers sharing one list
      // do not hold the event loop while the kernel copies it (sliced-response.ts).
      ServerResponse: SlicedResponse,
    },
    // Koa's handler answers its own failures (app.onerror), so its promise never rejects.
    (req, res) => {
      const { socket } = req;
      const queue = pending.get(socket) ?? [];
      // While draining, the answer before this one closes the connection: a request
      // pipelined behind it is never run (nothing of it committed), so none is left
      // without its answer.
      if (draining && queue.length > 0) return;
      queue.push(res);
      pending.set(socket, queue);
      res.once('close', () => {
        queue.splice(queue.indexOf(res), 1);
        if (queue.length === 0 && pending.get(socket) === queue) pending.delete(socket);
      });
      if (draining) lastOnConnection(res);
      reading.set(socket, { req, res });
      void handle(req, res);
    },
  );
  const warn = logger && repeatedWarnings(logger);
  guardStalls(
    server,
    { stallTimeoutMs: limits.stallTimeoutMs, maxPinnedBytes: limits.maxPinnedBytes, checkIntervalMs: limits.checkIntervalMs },
    {
      onClosed: ({ stalled, overCap, pinnedBytes }) => {
        if (stalled)
          warn?.('stalled', stalled, { pinnedBytes }, `closed connections that took no response bytes for ${limits.stallTimeoutMs} ms`);
        if (overCap)
          warn?.('over-cap', overCap, { pinnedBytes }, 'closed connections that took no response bytes: stalled ones pinned too much');
      },
    },
  );
  server.keepAliveTimeout = limits.keepAliveTimeoutMs;
  server.maxRequestsPerSocket = limits.maxRequestsPerSocket;
  // A client that sends its request and then closes its side (half-close) still gets
  // the answer; by default Node drops the connection on the client's FIN, which loses
  // any answer not ready at once, a committed PATCH's included.
  (server as Server & { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true;
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
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex & { _httpMessage?: { headersSent?: boolean } }) => {
    // A response already under way, or a socket that is gone, cannot take an answer.
    if (err.code === 'ECONNRESET' || !socket.writable || socket._httpMessage?.headersSent) {
      socket.destroy();
      return;
    }
    const [status, code, message] = answer(err);
    // The body of a request the app has (an unknown Transfer-Encoding, a bad chunk).
    const current = reading.get(socket);
    if (current && !current.req.complete && !current.res.headersSent) {
      answerOnResponse(current.res, status, code, message);
      return;
    }
    answerOnSocket(socket, status, code, message);
  });
  return Object.assign(server, {
    drain() {
      draining = true;
      for (const queue of pending.values()) lastOnConnection(queue.at(-1)!);
      server.closeIdleConnections();
    },
  });
}
