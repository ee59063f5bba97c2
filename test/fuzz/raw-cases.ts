// Raw requests for a socket: odd methods, targets, versions, header lines and framing.
import fc from 'fast-check';
import { jsonishBody } from './bodies.ts';
import { type Runtime, fill, petOfPath } from './checks.ts';
import { utf8AsLatin1 } from './encoding.ts';
import { RESERVED_HEADERS, authArb, contentTypeArb, headerValue, oddText, pathArb, tokenName } from './generators.ts';
export interface RawCase {
  method: string;
  target: string; // bytes, as a Latin-1 string
  version: string;
  eol: string;
  host: boolean;
  auth: string | undefined;
  contentType: string | undefined;
  lines: string[];
  body: string; // bytes, as a Latin-1 string
  framing: 'length' | 'short' | 'long' | 'chunked' | 'chunked-cut' | 'chunked-bad' | 'none' | 'both';
  close: boolean;
  halfClose: boolean;
}

const benignLineArb = fc.oneof(
  fc.constantFrom(
    'X-Request-Id: fuzz-1',
    'If-Match: "{VER}"',
    'If-Match: "{VER+1}"',
    'If-None-Match: {LIST}',
    'Accept: */*',
    'Content-Encoding: identity',
    'Content-Encoding: gzip',
    'Content-Encoding: deflate',
    'Expect: 100-continue',
    'Cookie: a=b',
    'Connection: keep-alive',
  ),
  fc
    .tuple(
      tokenName.filter((n) => !RESERVED_HEADERS.has(n.toLowerCase())),
      headerValue(20),
    )
    .map(([n, v]) => `${n}: ${v}`),
);

/** Well-formed HTTP/1.x that reaches the app: the layers behind the parser. */
const wellFormedRawArb: fc.Arbitrary<RawCase> = fc.record({
  method: fc.oneof(
    { weight: 6, arbitrary: fc.constant('PATCH') },
    { weight: 4, arbitrary: fc.constantFrom('GET', 'HEAD', 'DELETE', 'POST', 'PUT', 'OPTIONS') },
  ),
  target: pathArb,
  version: fc.constantFrom('HTTP/1.1', 'HTTP/1.1', 'HTTP/1.1', 'HTTP/1.0'),
  eol: fc.constant('\r\n'),
  host: fc.constant(true),
  auth: authArb,
  contentType: fc.oneof({ weight: 4, arbitrary: fc.constant('application/json') }, { weight: 1, arbitrary: contentTypeArb }),
  lines: fc.array(benignLineArb, { maxLength: 2 }),
  body: fc.oneof(
    { weight: 1, arbitrary: fc.constant('') },
    { weight: 6, arbitrary: jsonishBody.map(utf8AsLatin1) },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b).toString('latin1')) },
  ),
  framing: fc.constantFrom<RawCase['framing']>('length', 'length', 'length', 'length', 'chunked', 'chunked', 'short', 'none'),
  close: fc.oneof({ weight: 6, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
  halfClose: fc.oneof({ weight: 6, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
});

/** Anything goes: methods Node refuses, raw bytes in the target, odd versions, line ends,
 * header lines and framing. */
const hostileRawArb: fc.Arbitrary<RawCase> = fc.record({
  method: fc.oneof(
    { weight: 6, arbitrary: fc.constant('PATCH') },
    { weight: 4, arbitrary: fc.constantFrom('GET', 'HEAD', 'DELETE', 'POST', 'PUT', 'OPTIONS') },
    {
      weight: 2,
      arbitrary: fc.constantFrom('PROPFIND', 'TRACE', 'SEARCH', 'CONNECT', 'FOO', 'patch', 'Get', 'PÄTCH', '', 'GET GET', 'PRI'),
    },
    { weight: 1, arbitrary: fc.stringMatching(/^[A-Z]{1,8}$/) },
  ),
  target: fc.oneof(
    { weight: 6, arbitrary: pathArb },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        '*',
        'http://x/v1/inventory',
        'http://127.0.0.1/v1/inventory/7',
        '',
        '//',
        '/%',
        '/v1/inventory/7 x',
        'x:80',
      ),
    },
    { weight: 2, arbitrary: oddText.map((s) => utf8AsLatin1(`/v1/inventory/${s}`)) },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 30 }).map((b) => `/${Buffer.from(b).toString('latin1')}`) },
  ),
  version: fc.oneof(
    { weight: 10, arbitrary: fc.constant('HTTP/1.1') },
    {
      weight: 2,
      arbitrary: fc.constantFrom('HTTP/1.0', 'HTTP/2.0', 'HTTP/1.2', 'HTTP/0.9', 'http/1.1', 'HTTP/11', 'HTTP/1.', 'HTTPS/1.1', ''),
    },
  ),
  eol: fc.oneof({ weight: 12, arbitrary: fc.constant('\r\n') }, { weight: 1, arbitrary: fc.constantFrom('\n', '\r', '\n\r') }),
  host: fc.oneof({ weight: 9, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
  auth: authArb,
  contentType: fc.oneof({ weight: 4, arbitrary: fc.constant('application/json') }, { weight: 1, arbitrary: contentTypeArb }),
  lines: fc.array(
    fc.oneof(
      fc
        .tuple(
          tokenName.filter((n) => !RESERVED_HEADERS.has(n.toLowerCase())),
          headerValue(20),
        )
        .map(([n, v]) => `${n}: ${v}`),
      fc.constantFrom(
        'X-A: b',
        ' folded continuation',
        '\tfolded',
        'NoColon',
        ': novalue',
        'X-Nul: a\u0000b',
        'X-CR: a\rb',
        'Bad Name: v',
        'X-A : b',
        'Content-Length: 5',
        'Content-Length: -1',
        'Content-Length: 1e3',
        'Content-Length: 0x10',
        'Content-Length: 99999999999999999999',
        'Transfer-Encoding: chunked',
        'Transfer-Encoding: gzip',
        'Transfer-Encoding: chunked, gzip',
        'Transfer-Encoding: identity',
        'Expect: 100-continue',
        'Expect: nope',
        'Content-Encoding: gzip',
        'Content-Encoding: identity',
        'Content-Encoding: bogus',
        'Upgrade: websocket',
        'Connection: Upgrade',
        'Connection: keep-alive',
        'X-Request-Id: abc',
        'If-Match: *',
        'If-None-Match: *',
        'Authorization: Bearer {KEY}',
        'Content-Type: text/plain',
        'Host: second',
      ),
      oddText.map((s) => `X-Odd: ${utf8AsLatin1(s)}`),
    ),
    { maxLength: 3 },
  ),
  body: fc.oneof(
    { weight: 1, arbitrary: fc.constant('') },
    { weight: 5, arbitrary: jsonishBody.map(utf8AsLatin1) },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b).toString('latin1')) },
  ),
  framing: fc.oneof(
    { weight: 8, arbitrary: fc.constant<RawCase['framing']>('length') },
    { weight: 3, arbitrary: fc.constantFrom<RawCase['framing']>('short', 'long', 'chunked', 'chunked-cut', 'chunked-bad', 'none', 'both') },
  ),
  close: fc.oneof({ weight: 6, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
  halfClose: fc.oneof({ weight: 3, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
});

export const rawCaseArb: fc.Arbitrary<RawCase> = fc
  .oneof({ weight: 3, arbitrary: wellFormedRawArb }, { weight: 2, arbitrary: hostileRawArb })
  .map((c) => {
    // A request the server may rightly wait on (incomplete framing, odd line ends or
    // control bytes in the head) is half-closed, so that it is complete as sent.
    // PRI opens the HTTP/2 connection preface, whose rest llhttp waits for. So is one
    // whose own header lines announce a body that the framing then does not send.
    const head = c.method + c.target + c.version + c.lines.join('');
    const announcesBody = c.framing === 'none' && c.lines.some((line) => /^\s*(transfer-encoding|content-length)\s*:/i.test(line));
    const clean =
      c.eol === '\r\n' &&
      // eslint-disable-next-line no-control-regex -- the check is for control characters in the head
      !/[\x00-\x1f]/.test(head) &&
      !['long', 'chunked-cut', 'chunked-bad'].includes(c.framing) &&
      c.method !== 'PRI' &&
      !announcesBody;
    return { ...c, halfClose: c.halfClose || !clean };
  });

export function rawBytes(c: RawCase, rt: Runtime): Buffer {
  const { eol } = c;
  const petId = petOfPath(c.target);
  const lines = [`${c.method} ${c.target}${c.version === '' ? '' : ` ${c.version}`}`];
  if (c.host) lines.push('Host: fuzz');
  if (c.auth !== undefined) lines.push(`Authorization: ${fill(c.auth, rt, petId)}`);
  if (c.contentType !== undefined) lines.push(`Content-Type: ${c.contentType}`);
  if (c.close) lines.push('Connection: close');
  for (const line of c.lines) lines.push(fill(line, rt, petId));
  let body = c.body;
  const n = Buffer.byteLength(body, 'latin1');
  const chunked = (cut: boolean, bad: boolean) => {
    let out = '';
    for (let i = 0; i < body.length; i += 7) {
      const part = body.slice(i, i + 7);
      out += `${bad && i === 0 ? 'zz' : part.length.toString(16)}${eol}${part}${eol}`;
    }
    return cut ? out : `${out}0${eol}${eol}`;
  };
  switch (c.framing) {
    case 'length':
      lines.push(`Content-Length: ${n}`);
      break;
    case 'short':
      lines.push(`Content-Length: ${Math.max(0, n - 3)}`);
      break;
    case 'long':
      lines.push(`Content-Length: ${n + 5}`);
      break;
    case 'chunked':
    case 'chunked-cut':
    case 'chunked-bad':
      lines.push('Transfer-Encoding: chunked');
      body = chunked(c.framing === 'chunked-cut', c.framing === 'chunked-bad');
      break;
    case 'both':
      lines.push(`Content-Length: ${n}`, 'Transfer-Encoding: chunked');
      break;
    case 'none':
      break;
  }
  return Buffer.from(`${lines.join(eol)}${eol}${eol}${body}`, 'latin1');
}
