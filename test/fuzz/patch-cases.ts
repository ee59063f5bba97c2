// Near-valid PATCHes: a valid request with a chosen set of faults, and the answer the first
// fault in the fixed order must get.
// Each fault alone has a known answer; several together answer with the first in the
// order the service checks them in: 401, 405, 415, 413, 400 (path id), 400 (body), 404, 412.
import { validateHeaderValue } from 'node:http';
import fc from 'fast-check';
import * as assert from 'uvu/assert';
import { parsePetId } from '../../src/domain/events.ts';
import { send } from '../kit/http.ts';
import { type BodyCase, nested, NOT_A_BODY, validBodyArb } from './bodies.ts';
import { type Runtime, fill } from './checks.ts';
import { decodeParam, encodeSegment } from './encoding.ts';
import { BAD_CREDENTIALS, oddText, requestIdArb, schemeArb, sometimes, SPECIAL_IDS } from './generators.ts';
import { LIMIT, MAX, PETS, PET_IDS, TWO_53, TWO_63 } from './setup.ts';
const FAULTS = ['auth', 'method', 'media', 'size', 'id', 'body', 'missing', 'version'] as const;
export type Fault = (typeof FAULTS)[number];
export const EXPECTED: Record<Fault, [number, string[]]> = {
  auth: [401, ['unauthorized']],
  method: [405, ['method_not_allowed']],
  media: [415, ['unsupported_media_type']],
  size: [413, ['payload_too_large']],
  id: [400, ['invalid_pet_id']],
  body: [400, ['invalid_body', 'malformed_json', 'missing_body']],
  missing: [404, ['pet_not_found']],
  version: [412, ['precondition_failed']],
};

/** Bodies that must be refused with a 400 (they are at most 4 KiB). */
const invalidQuantity = fc.oneof(
  fc.constantFrom(
    '"5"',
    'true',
    'false',
    'null',
    '1.5',
    '-1',
    '2147483648',
    '1e400',
    '-1e400',
    '123456789012345678901234567890',
    '[]',
    '{}',
    '[5]',
    '{"quantity":5}',
    '5e-1',
    '0.5',
    '-0.5',
    '2147483647.5',
    '2.147483648e9',
    '""',
    '"\\ud800"',
    '"\\u0000"',
    '1e10',
    '01',
    '+1',
    '.5',
    '0x10',
    'NaN',
    'Infinity',
    '-',
    '5.',
    '1e',
  ),
  fc.integer({ max: -1 }).map(String),
  fc.bigInt({ min: 2147483648n, max: 10n ** 40n }).map(String),
  fc.tuple(fc.integer({ min: 0, max: 2147483646 }), fc.integer({ min: 1, max: 9 })).map(([n, d]) => `${n}.${d}`),
  fc.string().map((s) => JSON.stringify(s)),
  fc
    .jsonValue({ maxDepth: 2 })
    .filter((v) => typeof v !== 'number')
    .map((v) => JSON.stringify(v)),
  fc.integer({ min: 1, max: 2000 }).map((d) => nested(d)),
);

/** Conservatively: would the service accept this body? (Filters the random ones.) */
function mightBeValid(text: string): boolean {
  try {
    const value = JSON.parse(text.replace(/^\ufeff/, '')) as unknown;
    return typeof value === 'object' && value !== null && !Array.isArray(value) && Object.keys(value).length <= 1;
  } catch {
    return false;
  }
}

const invalidBodyArb: fc.Arbitrary<BodyCase> = fc.oneof(
  { weight: 5, arbitrary: invalidQuantity.map((v) => ({ text: `{"quantity":${v}}` })) },
  {
    weight: 4,
    arbitrary: fc
      .constantFrom(
        ...NOT_A_BODY,
        '{"qty":1}',
        '[{"quantity":1}]',
        '{"quantity":1,"quantity":2}',
        '{"quantity":1,"\\u0071uantity":1}',
        '{"quantity":"x","quantity":5}',
        '{"quantity":1,"__proto__":{"x":1}}',
        '{"__proto__":{"quantity":1}}',
        '{"quantity":1,"constructor":{"prototype":{}}}',
        '{"constructor":1,"quantity":1}',
        '{"quantity":1,"status":"sold"}',
        '{quantity:1}',
        "{'quantity':1}",
        'quantity=1',
        '   ',
        '{"quantity":1}}',
        '{"quantity":1},',
        '{"quantity":1}\u0000',
        '\u0000{"quantity":1}',
        '{"quantity":"1\u0000"}',
        '{"quantity\u0000":1}',
        '\ufeff\ufeff{"quantity":1}',
        '{"quantity":1}{"quantity":2}',
        '{"quantity":1,}',
        '{,"quantity":1}',
        '{"quantity" 1}',
        '{"quantity":1 2}',
      )
      .map((text) => ({ text })),
  },
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.string({ minLength: 1 }), fc.jsonValue({ maxDepth: 2 }))
      .filter(([k]) => k !== 'quantity')
      .map(([k, v]) => ({ text: `{"quantity":1,${JSON.stringify(k)}:${JSON.stringify(v)}}` })),
  },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 13 }).map((n) => ({ text: '{"quantity":5}'.slice(0, n) })) },
  { weight: 1, arbitrary: oddText.filter((s) => !mightBeValid(s)).map((text) => ({ text })) },
  {
    weight: 2,
    arbitrary: fc
      .tuple(
        fc.constantFrom('{"quantity":1,"x":"@"}', '{"quantity":"@"}', '{"quantity":1@}', '{"@":1}', '{"quantity":@1}'),
        fc.uint8Array({ minLength: 1, maxLength: 8 }),
      )
      .map(([shape, bytes]) => ({ text: shape.replace('@', () => Buffer.from(bytes).toString('latin1')), latin1: true }))
      .filter((b) => !mightBeValid(Buffer.from(b.text, 'latin1').toString('utf8'))),
  },
  {
    weight: 1,
    arbitrary: fc
      .constantFrom(nested(2047), `{"quantity":${nested(2040)}}`, '{"a":'.repeat(600) + '1' + '}'.repeat(600))
      .map((text) => ({ text })),
  },
);

const invalidIdArb = fc
  .oneof(
    fc.constantFrom(...SPECIAL_IDS),
    fc.bigInt({ min: MAX + 1n, max: 2n ** 80n }).map(String),
    fc.integer({ min: 0, max: 4 }).map((d) => String(TWO_63 + BigInt(d))),
    fc.bigInt({ min: 1n, max: MAX }).map((b) => `0${b}`),
    fc.bigInt({ min: -MAX - 1n, max: 0n }).map(String),
    fc.bigInt({ min: 1n, max: 10n ** 6n }).map((b) => `${b}e0`),
    oddText.filter((s) => s.length > 0),
  )
  .map(encodeSegment)
  .filter((e) => e.length > 0 && parsePetId(decodeParam(e)) === undefined);

const untrackedIdArb = fc
  .oneof(fc.bigInt({ min: 1n, max: MAX }), fc.constantFrom(1n, 6n, 8n, TWO_53, TWO_53 + 2n, MAX - 1n))
  .filter((b) => !PETS.some(([id]) => id === b))
  .map(String);

const faultArbs = {
  auth: fc.constantFrom<string | undefined>(undefined, ...BAD_CREDENTIALS),
  method: fc.constantFrom('PUT', 'POST', 'DELETE', 'PROPFIND', 'TRACE', 'MKCOL', 'LOCK', 'PURGE'),
  media: fc.oneof(
    fc.constantFrom<string | undefined>(
      'text/plain',
      'application/x-www-form-urlencoded',
      'application/merge-patch+json',
      'application/jsonx',
      'application/json; charset=latin1',
      'application/json; charset="utf-16"',
      'application/json; charset=',
      'application/xml',
      'json',
      '*/*',
      'application/*',
      '',
      undefined,
      'text/json',
      'application/json-patch+json',
      'application/json, text/plain',
      'x/'.padEnd(3000, 'a'),
      'application/json; charset=utf8',
      'application/json; x=y',
      'application/json; charset=utf-8; charset=utf-8',
    ),
    fc.stringMatching(/^[a-z]{1,10}\/[a-z+.-]{1,12}$/).filter((s) => s !== 'application/json'),
  ),
  size: fc.oneof(
    fc.record({ total: fc.integer({ min: LIMIT + 1, max: LIMIT + 300 }), filler: fc.constantFrom(' ', 'é', '\u{1F600}', '\u0000') }),
    fc.record({ total: fc.integer({ min: 8000, max: 20000 }), filler: fc.constantFrom(' ', 'x') }),
    fc.record({ nest: fc.constantFrom(2100, 5000, 10000) }),
  ),
  id: invalidIdArb,
  body: invalidBodyArb,
  missing: untrackedIdArb,
  version: fc.constantFrom(
    '"{VER+1}"',
    '"{VER-1}"',
    '"{VER+100}"',
    'W/"{VER}"',
    '"{VER}" garbage',
    'garbage',
    '"a", "b"',
    '"{VER}", W/"x',
    '""',
    '"0"',
    'W/"{VER}", "{VER-1}"',
  ),
};

type SizeFault = { total: number; filler: string } | { nest: number };

export interface PatchCase {
  pet: number;
  valid: { text: string; quantity: number };
  scheme: string;
  contentType: string;
  ifMatch: string | undefined;
  requestId: string | undefined;
  pad: number | undefined;
  chunked: boolean;
  query: string;
  extra: [string, string][];
  faults: Partial<{
    auth: string | undefined;
    method: string;
    media: string | undefined;
    size: SizeFault;
    id: string;
    body: BodyCase;
    missing: string;
    version: string;
  }>;
}

const faultSetArb = fc.oneof(
  { weight: 3, arbitrary: fc.constant<Fault[]>([]) },
  { weight: 7, arbitrary: fc.constantFrom(...FAULTS).map((f) => [f]) },
  { weight: 2, arbitrary: fc.uniqueArray(fc.constantFrom(...FAULTS), { minLength: 2, maxLength: 3 }) },
);

export const patchCaseArb: fc.Arbitrary<PatchCase> = fc
  .record({
    pet: fc.integer({ min: 0, max: PETS.length - 1 }),
    valid: validBodyArb,
    scheme: fc.tuple(schemeArb, fc.constantFrom(' ', '  ')).map(([s, sep]) => `${s}${sep}{KEY}`),
    contentType: fc.constantFrom(
      'application/json',
      'application/json; charset=utf-8',
      'application/json;charset=UTF-8',
      'APPLICATION/JSON',
      'application/json; charset="utf-8"',
      'application/json ; charset=utf-8',
    ),
    ifMatch: sometimes(fc.constantFrom('"{VER}"', '*', ' * ', '"x", "{VER}"', 'W/"x", "{VER}"', '"{VER}" '), 30),
    requestId: requestIdArb,
    pad: sometimes(fc.integer({ min: LIMIT - 16, max: LIMIT }), 20),
    chunked: fc.boolean(),
    // An empty query changes nothing; a named parameter is refused (the operation takes
    // none), which test/http/unknown-query.test.ts pins.
    query: fc.constantFrom('', '', '', '?'),
    extra: fc.array(
      fc.constantFrom<[string, string]>(
        ['Accept', '*/*'],
        ['Accept-Encoding', 'gzip'],
        ['X-Forwarded-For', '1.2.3.4'],
        ['Cookie', 'a=b'],
        ['Content-Encoding', 'identity'],
        ['Expect', '100-continue'],
        ['Origin', 'http://evil.example'],
        ['X-HTTP-Method-Override', 'DELETE'],
      ),
      { maxLength: 2 },
    ),
    set: faultSetArb,
    variants: fc.record(faultArbs),
  })
  .map(({ set, variants, ...rest }) => {
    const faults: PatchCase['faults'] = {};
    for (const f of set) (faults as Record<string, unknown>)[f] = variants[f];
    return { ...rest, faults };
  });

export interface BuiltPatch {
  request: Parameters<typeof send>[1];
  petId: string;
  expect: Fault | undefined;
}

export function buildPatch(c: PatchCase, rt: Runtime): BuiltPatch | undefined {
  const { faults } = c;
  const has = (f: Fault) => Object.prototype.hasOwnProperty.call(faults, f);
  const petId = has('id') ? faults.id! : has('missing') ? faults.missing! : PET_IDS[c.pet]!;
  const headers: Record<string, string> = {};
  const auth = has('auth') ? faults.auth : c.scheme;
  if (auth !== undefined) headers.Authorization = fill(auth, rt, petId);
  const body: BodyCase = has('body') ? faults.body! : { text: c.valid.text };
  let bytes = Buffer.from(body.text, body.latin1 ? 'latin1' : 'utf8');
  if (has('size')) {
    const size = faults.size!;
    if ('nest' in size) bytes = Buffer.from(`{"quantity":${nested(size.nest)}}`);
    else {
      const filler = Buffer.from(size.filler);
      const padding = Buffer.alloc(Math.max(0, size.total - bytes.length) + filler.length, filler);
      bytes = Buffer.concat([bytes, padding]).subarray(0, Math.max(size.total, bytes.length + 1));
    }
    assert.ok(bytes.length > LIMIT);
  } else if (c.pad !== undefined && bytes.length < c.pad) {
    bytes = Buffer.concat([bytes, Buffer.alloc(c.pad - bytes.length, ' ')]);
  }
  if (!has('size') && bytes.length > LIMIT) return undefined;
  let contentType = has('media') ? faults.media : c.contentType;
  // No Content-Type and no body is a missing body (400), not a 415: keep the fault a 415.
  if (has('media') && (contentType === undefined || contentType === '') && bytes.length === 0) contentType = 'text/plain';
  if (contentType !== undefined) headers['Content-Type'] = contentType;
  const ifMatch = has('version') ? faults.version : c.ifMatch;
  if (ifMatch !== undefined) headers['If-Match'] = fill(ifMatch, rt, petId);
  if (c.requestId !== undefined) headers['X-Request-Id'] = fill(c.requestId, rt, petId);
  for (const [name, value] of c.extra) headers[name] = value;
  try {
    for (const [name, value] of Object.entries(headers)) validateHeaderValue(name, value);
  } catch {
    return undefined;
  }
  const expect = FAULTS.find(has);
  return {
    request: {
      method: has('method') ? faults.method! : 'PATCH',
      path: `/v1/inventory/${petId}${c.query}`,
      headers,
      body: bytes,
      chunked: c.chunked,
    },
    petId,
    expect,
  };
}
