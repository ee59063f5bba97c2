// What the tests of the OpenAPI document against the running service share: the document,
// its references resolved, and checks that an answer is one the document describes.
// This test walks an arbitrary JSON document (any path, operation, response or header
// the document holds), so its values are untyped by nature; the assertions check them.
/* eslint-disable @typescript-eslint/no-explicit-any, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-call, @typescript-eslint/no-unsafe-argument, @typescript-eslint/no-unsafe-return */
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { Ajv2020 } from 'ajv/dist/2020.js';
import * as assert from 'uvu/assert';
import { type Response } from './http.ts';
import { appSuite } from './suites.ts';
import { DEFAULT_LIMITS } from '../../src/http/server/node-server.ts';

export type Obj = Record<string, any>;
export const doc: Obj = JSON.parse(readFileSync(new URL('../../src/openapi.json', import.meta.url), 'utf8'));
export const ajv = new Ajv2020({ strict: false, allErrors: true });
ajv.addSchema(doc, 'openapi');
export const deref = (o: Obj): Obj =>
  o.$ref
    ? deref(
        o.$ref
          .slice(2)
          .split('/')
          .reduce((a: Obj, k: string) => a[k], doc),
      )
    : o;

// Headers the service sends on some answers and always on those: where one is seen, the
// document must declare it on that response and mark it required.
const WATCHED = ['x-request-id', 'etag', 'www-authenticate', 'accept-patch', 'retry-after', 'allow'];

export function operationOf(method: string, path: string): Obj {
  const p = path.split('?')[0]!;
  const item =
    p === '/v1/inventory'
      ? doc.paths['/inventory']
      : p.startsWith('/v1/inventory/')
        ? doc.paths['/inventory/{petId}']
        : p.startsWith('/v1/log/tile/')
          ? doc.paths[tileTemplate(p)]
          : doc.paths[p];
  const op = item?.[method.toLowerCase()];
  if (!op) throw new Error(`the document has no operation for ${method} ${path}`);
  return op;
}

/** The document's path of a tile's request path. */
function tileTemplate(path: string): string {
  const kind = path.split('/')[4];
  return kind === 'entries' || kind === 'events' ? `/log/tile/${kind}/{index}` : '/log/tile/{level}/{index}';
}

// Request headers the service judges: where a test sends one, the operation must declare it.
const JUDGED = ['if-match', 'if-none-match', 'x-request-id'];

export function conforms(
  method: string,
  path: string,
  res: Pick<Response, 'status' | 'headers' | 'text'>,
  sent: Record<string, string> = {},
): void {
  const op = operationOf(method, path);
  const what = `${op.operationId} ${res.status}`;
  const parameters = new Set(
    (op.parameters ?? [])
      .map(deref)
      .filter((p: Obj) => p.in === 'header')
      .map((p: Obj) => p.name.toLowerCase()),
  );
  for (const name of Object.keys(sent)
    .map((n) => n.toLowerCase())
    .filter((n) => JUDGED.includes(n))) {
    assert.ok(parameters.has(name), `${op.operationId}: the service judges ${name}, which the operation does not declare`);
  }
  const documented = op.responses[String(res.status)];
  assert.ok(documented, `${what}: the status is not listed on the operation`);
  conformsTo(what, deref(documented), res);
}

/** The answer matches one documented response: headers declared and required, Error body. */
export function conformsTo(what: string, response: Obj, res: Pick<Response, 'status' | 'headers' | 'text'>): void {
  const declared = new Map(Object.entries(response.headers ?? {}).map(([name, h]) => [name.toLowerCase(), deref(h as Obj)]));
  for (const name of WATCHED.filter((n) => res.headers[n] !== undefined)) {
    assert.ok(declared.has(name), `${what}: sends ${name}, which the document does not declare`);
    assert.is(declared.get(name)!.required, true, `${what}: always sends ${name}, not marked required`);
  }
  for (const [name, header] of declared) {
    if (header.required) assert.ok(res.headers[name] !== undefined, `${what}: ${name} is required but not sent`);
    const sent = res.headers[name];
    if (sent !== undefined) {
      // A header is text: one whose schema is an integer carries its digits (OpenAPI's simple style).
      const value = header.schema?.type === 'integer' && /^-?[0-9]+$/.test(String(sent)) ? Number(sent) : sent;
      assert.ok(ajv.validate(header.schema, value), `${what}: ${name}: ${ajv.errorsText()}`);
    }
  }
  if (res.status >= 400) {
    assert.ok(ajv.validate({ $ref: 'openapi#/components/schemas/Error' }, JSON.parse(res.text)), `${what}: ${ajv.errorsText()}`);
  }
}

/** A raw request on a socket (for what node:http will not send), answered then closed. */
export function raw(port: number, request: string, waitMs = 5_000): Promise<Pick<Response, 'status' | 'headers' | 'text'>> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let data = '';
    const timer = setTimeout(() => socket.destroy(new Error(`no answer within ${waitMs} ms`)), waitMs);
    socket.setEncoding('utf8').on('data', (c: string) => (data += c));
    socket.on('error', reject);
    socket.on('close', () => {
      clearTimeout(timer);
      const [head = '', text = ''] = data.split('\r\n\r\n');
      const [statusLine, ...lines] = head.split('\r\n');
      const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
      resolve({ status: Number(statusLine?.split(' ')[1]), headers, text });
    });
    socket.write(request);
  });
}
/** Suites whose every test gets a fresh app with pet 7 tracked, and short timeouts for the answers before any operation. */
export const liveSuite = (name: string) =>
  appSuite(name, {
    app: { limits: { ...DEFAULT_LIMITS, headersTimeoutMs: 300, requestTimeoutMs: 600, checkIntervalMs: 100 } },
    given: (t) => t.track(7, 3),
  });

export const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
