// The fuzz tests' clients: node:http with a deadline, and raw bytes on a socket with the
// answers parsed back off it (several per connection, HEAD answers without a body).
import { connect } from 'node:net';
import * as assert from 'uvu/assert';
import { type Response, send } from '../kit/http.ts';
import type { Outcome } from './checks.ts';
import { STALL_MS } from './setup.ts';
/** send(), with a deadline: a request the server never answers fails the property. */
export async function timedSend(port: number, options: Parameters<typeof send>[1]): Promise<Outcome> {
  const start = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${STALL_MS + 500} ms`)), STALL_MS + 500);
  });
  let res: Response;
  try {
    res = await Promise.race([send(port, options), deadline]);
  } finally {
    clearTimeout(timer);
  }
  return {
    method: (options.method ?? 'GET').toUpperCase(),
    status: res.status,
    contentType: res.headers['content-type'],
    text: res.text,
    etag: res.headers.etag,
    ms: performance.now() - start,
  };
}

interface RawAnswer {
  status: number;
  headers: Map<string, string>;
  body: Buffer;
}

/** An answer to HEAD has no body, but Node's own answer to a HEAD it could not parse
 * does: it has one when the bytes that follow are not the next answer. */
function headAnswerHasNoBody(data: Buffer, at: number, length: number): boolean {
  return data.length - at < length || data.subarray(at, at + 9).toString('latin1') === 'HTTP/1.1 ';
}

/** Parses the answers in what the server sent (lenient about HEAD bodies). */
function parseAnswers(data: Buffer, head: boolean): { answers: RawAnswer[]; rest: Buffer } {
  const answers: RawAnswer[] = [];
  let at = 0;
  while (at < data.length) {
    const end = data.indexOf('\r\n\r\n', at);
    if (end < 0) break;
    const [statusLine, ...headerLines] = data.subarray(at, end).toString('latin1').split('\r\n');
    const m = /^HTTP\/1\.[01] (\d{3})(?: .*)?$/.exec(statusLine ?? '');
    assert.ok(m, `a status line: ${JSON.stringify(statusLine)}`);
    const status = Number(m[1]);
    const headers = new Map<string, string>();
    for (const line of headerLines) {
      const colon = line.indexOf(':');
      const name = line.slice(0, colon).toLowerCase();
      if (!headers.has(name)) headers.set(name, line.slice(colon + 1).trim());
    }
    at = end + 4;
    if (status < 200) continue; // 100 Continue
    let body: Buffer = Buffer.alloc(0);
    const length = headers.get('content-length');
    if (headers.get('transfer-encoding')?.toLowerCase() === 'chunked') {
      const parts: Buffer[] = [];
      for (;;) {
        const lineEnd = data.indexOf('\r\n', at);
        if (lineEnd < 0) return { answers, rest: data.subarray(at) };
        const size = parseInt(data.subarray(at, lineEnd).toString('latin1'), 16);
        at = lineEnd + 2;
        if (size === 0) {
          at += 2;
          break;
        }
        parts.push(data.subarray(at, at + size));
        at += size + 2;
      }
      body = Buffer.concat(parts);
    } else if (length !== undefined && status !== 304 && !(head && answers.length === 0 && headAnswerHasNoBody(data, at, Number(length)))) {
      body = data.subarray(at, at + Number(length));
      at += Number(length);
    } else if (length === undefined && status !== 304 && status !== 204) {
      body = data.subarray(at);
      at = data.length;
    }
    answers.push({ status, headers, body });
  }
  return { answers, rest: data.subarray(at) };
}

export interface RawExchange {
  answers: RawAnswer[];
  /** ms until the head of the first answer arrived (undefined: none did). */
  firstMs: number | undefined;
  timedOut: boolean;
}

/** Writes the bytes, half-closes if asked, and collects what comes back until the server
 * closes, the answer is complete and the line is quiet, or the deadline. */
export function exchange(port: number, bytes: Buffer, halfClose: boolean, head: boolean): Promise<RawExchange> {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const chunks: Buffer[] = [];
    let firstMs: number | undefined;
    let quiet: NodeJS.Timeout | undefined;
    let done = false;
    const finish = (timedOut: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(deadline);
      clearTimeout(quiet);
      socket.destroy();
      try {
        resolve({ answers: parseAnswers(Buffer.concat(chunks), head).answers, firstMs, timedOut });
      } catch (err) {
        // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- passes on whatever parseAnswers threw, unchanged
        reject(err);
      }
    };
    const socket = connect(port, '127.0.0.1', () => {
      socket.write(bytes);
      if (halfClose) socket.end();
    });
    const deadline = setTimeout(() => finish(true), STALL_MS + 500);
    socket.on('data', (c: Buffer) => {
      chunks.push(c);
      const data = Buffer.concat(chunks);
      if (firstMs === undefined && data.includes('\r\n\r\n')) firstMs = performance.now() - start;
      clearTimeout(quiet);
      if (firstMs !== undefined) quiet = setTimeout(() => finish(false), 40);
    });
    socket.on('close', () => finish(false));
    // A reset after (or instead of) the answer: judge what arrived.
    socket.on('error', () => finish(false));
  });
}
