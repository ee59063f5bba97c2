// The node:http server around the Koa app. Requests that Node cannot parse never reach
// Koa; clientError answers them in the Error shape too, instead of a bare 400.
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

export function createHttpServer(app: Koa): Server {
  const server = createServer(app.callback());
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex & { _httpMessage?: { headersSent?: boolean } }) => {
    // A response already under way, or a socket that is gone, cannot take an answer.
    if (err.code === 'ECONNRESET' || !socket.writable || socket._httpMessage?.headersSent) {
      socket.destroy();
      return;
    }
    const [status, code, message] = answer(err);
    const body = JSON.stringify({ code, message, status });
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
  return server;
}
