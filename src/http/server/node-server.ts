// The node:http server around the Koa app: limits against slow and greedy clients, the
// stall guard, the Error shape for requests that never reach Koa (answers-outside-koa.ts)
// and the drain of keep-alive connections at shutdown (connection-drain.ts).
import { createServer, type Server } from 'node:http';
import type Koa from 'koa';
import { repeatedWarnings, type Logger } from '../../support/logger.ts';
import { answerOutsideKoa, type RequestsBeingRead } from './answers-outside-koa.ts';
import { makeConnectionDrain } from './connection-drain.ts';
import { SlicedResponse } from './sliced-response.ts';
import { guardStalls, type GuardTiming } from './stall-guard.ts';

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

/** The server, and how it ends its connections at shutdown. */
type ServiceServer = Server & {
  /**
   * From now on every answer carries `Connection: close` and its connection is closed
   * once it is sent; idle connections are closed at once. With close() the drain then
   * takes as long as the requests in flight, not a keep-alive client's whole stream.
   */
  drain(): void;
};

/** logger hears, at most once a second, of connections closed for not reading; the stall
 * guard keeps time on the real clock and its own interval unless given others. */
export function createHttpServer(
  app: Koa,
  limits: ServerLimits = DEFAULT_LIMITS,
  logger?: Logger,
  stallTiming: GuardTiming = {},
): ServiceServer {
  const handle = app.callback();
  // Each connection's latest request, while its body may still be refused by the parser.
  const reading: RequestsBeingRead = new WeakMap();
  const connections = makeConnectionDrain(() => server.closeIdleConnections());
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
      if (!connections.admit(socket, res)) return;
      reading.set(socket, { req, res });
      void handle(req, res);
    },
  );
  const warn = logger && repeatedWarnings(logger);
  guardStalls(
    server,
    { stallTimeoutMs: limits.stallTimeoutMs, maxPinnedBytes: limits.maxPinnedBytes, checkIntervalMs: limits.checkIntervalMs },
    {
      ...stallTiming,
      responsesOf: (socket) => connections.responsesOf(socket),
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
  answerOutsideKoa(server, reading);
  return Object.assign(server, { drain: () => connections.drain() });
}
