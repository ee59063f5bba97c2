// The HTTP side of the kit: a raw client (node:http, so that bodies, headers and big
// numbers arrive exactly as sent), the shapes tests read, and the one check of the Error
// shape every failure answers with.
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { connect } from 'node:net';
import * as assert from 'uvu/assert';

export interface Response {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  /** The body parsed as JSON, read as the shape T the test expects (res.json<ErrorBody>()). */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- untyped callers read a few members; typed callers name T
  json: <T = any>() => T;
}

/** JSON text read as the shape T the test expects. */
export function parseJson<T>(text: string): T {
  return JSON.parse(text) as T;
}

/** One access-log line (pino JSON), the fields tests read. */
export interface AccessLogLine {
  requestId?: string;
  actor?: string;
  method?: string;
  path?: string;
  status?: number | null;
  durationMs?: number;
  time: string;
  aborted?: boolean;
}

/** The Error shape every failure answers with. */
export interface ErrorBody {
  code: string;
  message: string;
  status: number;
}

/** One inventory item as GET and PATCH render it. */
export interface ItemBody {
  petId: number;
  quantity: number;
  status: string;
}

export interface RequestOptions {
  method?: string;
  path: string;
  headers?: Record<string, string | number>;
  body?: string | Buffer;
  /** Send the body in chunks without Content-Length (Transfer-Encoding: chunked). */
  chunked?: boolean;
}

export function send(port: number, options: RequestOptions): Promise<Response> {
  return new Promise((resolve, reject) => {
    // Frame every body explicitly: Node sends a DELETE body unframed otherwise.
    const framing: Record<string, string | number> =
      options.body === undefined
        ? {}
        : options.chunked
          ? { 'Transfer-Encoding': 'chunked' }
          : { 'Content-Length': Buffer.byteLength(options.body) };
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        method: options.method ?? 'GET',
        path: options.path,
        headers: { ...framing, ...options.headers },
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({ status: res.statusCode!, headers: res.headers, text, json: <T>() => JSON.parse(text) as T });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    if (options.body !== undefined) {
      if (options.chunked) {
        const body = Buffer.from(options.body);
        for (let i = 0; i < body.length; i += 1000) req.write(body.subarray(i, i + 1000));
      } else {
        req.write(options.body);
      }
    }
    req.end();
  });
}

/** What assertErrorShape reads of an answer (a Response, or one parsed off a raw socket). */
export interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
}

/**
 * The answer is the Error shape: the HTTP status, application/json, and a body of exactly
 * {code, message, status} with that status, that code (or one of these codes) and a
 * message that says something. Returns the body.
 */
export function assertErrorShape(res: Answer, status: number, code: string | readonly string[], label = ''): ErrorBody {
  const at = label ? `${label}: ` : '';
  assert.is(res.status, status, `${at}status (${res.text.slice(0, 300)})`);
  assert.match(String(res.headers['content-type']), /^application\/json(;|$)/, `${at}${res.status} is application/json`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(res.text);
  } catch {
    assert.unreachable(`${at}the ${res.status} body is JSON: ${JSON.stringify(res.text.slice(0, 300))}`);
  }
  assert.ok(parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed), `${at}an object`);
  const body = parsed as Record<string, unknown>;
  assert.equal(Object.keys(body).sort(), ['code', 'message', 'status'], `${at}exactly code, message, status`);
  assert.is(body.status, status, `${at}the status member equals the HTTP status`);
  if (typeof code === 'string') assert.is(body.code, code, `${at}code`);
  else assert.ok(code.includes(body.code as string), `${at}code ${String(body.code)} is one of ${code.join(', ')}`);
  assert.type(body.message, 'string', `${at}message`);
  assert.ok((body.message as string).length > 0, `${at}a message`);
  return body as unknown as ErrorBody;
}

/** Sends raw bytes on a new connection and returns everything the server answers. */
export function sendRaw(port: number, text: string | Buffer, endAfter = true): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.write(text);
      if (endAfter) socket.end();
    });
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
    socket.on('error', reject);
    setTimeout(() => socket.destroy(), 3000);
  });
}

/** A raw HTTP/1.1 answer as assertErrorShape reads it: status, headers (names in lower case), body. */
export function rawAnswer(response: string): Answer {
  const end = response.indexOf('\r\n\r\n');
  const [statusLine = '', ...lines] = response.slice(0, end).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) headers[line.slice(0, line.indexOf(':')).toLowerCase()] = line.slice(line.indexOf(':') + 1).trim();
  return { status: Number(statusLine.split(' ')[1]), headers, text: response.slice(end + 4) };
}
