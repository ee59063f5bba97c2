// The node:http server around the Koa app: limits against slow and greedy clients, and
// the Error shape for requests that never reach Koa (unparseable, too slow, headers too
// large), which clientError answers instead of Node's bare 400.
import { randomUUID } from 'node:crypto';
import { createServer, STATUS_CODES, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type Koa from 'koa';
import type { ErrorCode } from './errors.ts';

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
}

export const DEFAULT_LIMITS: ServerLimits = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
  maxRequestsPerSocket: 10_000,
  checkIntervalMs: 1_000,
  maxHeaderBytes: 16 * 1024,
};

export function createHttpServer(app: Koa, limits: ServerLimits = DEFAULT_LIMITS): Server {
  const server = createServer(
    {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      connectionsCheckingInterval: limits.checkIntervalMs,
      maxHeaderSize: limits.maxHeaderBytes,
    },
    app.callback(),
  );
  server.keepAliveTimeout = limits.keepAliveTimeoutMs;
  server.maxRequestsPerSocket = limits.maxRequestsPerSocket;
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex & { _httpMessage?: { headersSent?: boolean } }) => {
    // A response already under way, or a socket that is gone, cannot take an answer.
    if (err.code === 'ECONNRESET' || !socket.writable || socket._httpMessage?.headersSent) {
      socket.destroy();
      return;
    }
    const [status, code, message] = answer(err);
    const body = JSON.stringify({ code, message, status });
    // No request was read, so no X-Request-Id of the client's: a new one, as always.
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `X-Request-Id: ${randomUUID()}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
  return server;
}
