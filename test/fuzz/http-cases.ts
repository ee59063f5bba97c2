// A whole random request through node:http, and how it becomes send() options.
import { validateHeaderName, validateHeaderValue } from 'node:http';
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { send } from '../kit/http.ts';
import { type BodyCase, bodyArb } from './bodies.ts';
import { type Runtime, fill, petOfPath } from './checks.ts';
import { authArb, contentTypeArb, extraHeaderArb, ifMatchArb, ifNoneMatchArb, pathArb, requestIdArb, sometimes } from './generators.ts';
export interface HttpCase {
  method: string;
  path: string;
  auth: string | undefined;
  contentType: string | undefined;
  requestId: string | undefined;
  ifMatch: string | undefined;
  ifNoneMatch: string | undefined;
  extra: [string, string][];
  body: BodyCase | undefined;
}

const methodArb = fc.oneof(
  { weight: 6, arbitrary: fc.constant('PATCH') },
  { weight: 4, arbitrary: fc.constantFrom('GET', 'HEAD', 'PUT', 'POST', 'DELETE', 'OPTIONS') },
  { weight: 1, arbitrary: fc.constantFrom('PROPFIND', 'TRACE', 'SEARCH', 'PURGE', 'MKCOL', 'LOCK', 'REPORT', 'QUERY', 'MERGE') },
);

export const httpCaseArb: fc.Arbitrary<HttpCase> = fc.record({
  method: methodArb,
  path: pathArb,
  auth: authArb,
  contentType: contentTypeArb,
  requestId: requestIdArb,
  ifMatch: ifMatchArb,
  ifNoneMatch: ifNoneMatchArb,
  extra: fc.array(extraHeaderArb, { maxLength: 2 }),
  body: sometimes(bodyArb, 85),
});

/** Turns a case into send() options, its placeholders filled; undefined when node:http
 * itself would refuse to send it. */
export function toRequest(c: HttpCase, rt: Runtime): Parameters<typeof send>[1] | undefined {
  const petId = petOfPath(c.path);
  const headers: Record<string, string> = {};
  const set = (name: string, value: string | undefined) => {
    if (value !== undefined) headers[name] = fill(value, rt, petId);
  };
  set('Authorization', c.auth);
  set('Content-Type', c.contentType);
  set('X-Request-Id', c.requestId);
  set('If-Match', c.ifMatch);
  set('If-None-Match', c.ifNoneMatch);
  for (const [name, value] of c.extra) set(name, value);
  let body: string | Buffer | undefined;
  if (c.body) {
    body = Buffer.from(c.body.text, c.body.latin1 ? 'latin1' : 'utf8');
    if (c.body.gzip) {
      body = gzipSync(body);
      headers['Content-Encoding'] = 'gzip';
    }
  }
  try {
    for (const [name, value] of Object.entries(headers)) {
      validateHeaderName(name);
      validateHeaderValue(name, value);
    }
  } catch {
    return undefined;
  }
  return { method: c.method, path: c.path, headers, body, chunked: c.body?.chunked ?? false };
}
