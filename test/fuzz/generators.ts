// Generators (fast-check) of request parts: header text, ids, paths, keys, media types,
// conditional headers and extra headers, each mixing valid, near-valid and hostile values.
// Generators
import fc from 'fast-check';
import { encodeSegment, encodeTarget, utf8AsLatin1 } from './encoding.ts';
import { MAX, PET_IDS, TWO_53, TWO_63 } from './setup.ts';
const headerChar = fc
  .oneof(
    { weight: 12, arbitrary: fc.integer({ min: 0x20, max: 0x7e }) },
    { weight: 1, arbitrary: fc.integer({ min: 0x80, max: 0xff }) },
    { weight: 1, arbitrary: fc.constant(0x09) },
  )
  .map((c) => String.fromCharCode(c));
/** A value node:http lets through (tab, printable ASCII, Latin-1). */
export const headerValue = (maxLength = 40) => fc.string({ unit: headerChar, maxLength });
export const tokenName = fc.stringMatching(/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,20}$/);
const loneSurrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c));
export const oddText = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 12 }),
  fc.string({ unit: 'binary', maxLength: 12 }),
  fc.string({
    unit: fc.oneof(loneSurrogate, fc.constantFrom('\u0000', '\u200b', '\ufeff', '\u2028', 'é', '７', '٧', '\u{1F600}')),
    maxLength: 6,
  }),
);

export const SPECIAL_IDS = [
  '0',
  '-0',
  '00',
  '007',
  '0007',
  '-1',
  '-7',
  '-9223372036854775808',
  '9223372036854775808',
  '18446744073709551615',
  '18446744073709551616',
  '99999999999999999999',
  '9007199254740992',
  '9007199254740993',
  '9007199254740994',
  '9.007199254740993e15',
  '9.223372036854775807E18',
  '1e3',
  '7e0',
  '7E0',
  '7.0',
  '7.',
  '.7',
  '+7',
  '0x7',
  '0b1',
  '0o7',
  'Infinity',
  'NaN',
  'abc',
  '7a',
  '%37',
  '%zz',
  '%',
  '%0',
  '%00',
  '%2F',
  '7%00',
  '7%2F8',
  '%E2%80%8B7',
  '%EF%BC%97',
  '٧',
  '７',
  '7 ',
  ' 7',
  '%207',
  '..',
  '.',
  '1_000',
  '1,000',
];

const idArb: fc.Arbitrary<string> = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...PET_IDS) },
  { weight: 1, arbitrary: fc.bigInt({ min: 1n, max: MAX }).map(String) },
  { weight: 1, arbitrary: fc.integer({ min: -4, max: 4 }).map((d) => String(TWO_53 + BigInt(d))) },
  { weight: 1, arbitrary: fc.integer({ min: -4, max: 4 }).map((d) => String(TWO_63 + BigInt(d))) },
  { weight: 2, arbitrary: fc.constantFrom(...SPECIAL_IDS) },
  { weight: 1, arbitrary: fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }).map(String) },
  { weight: 1, arbitrary: fc.tuple(fc.integer({ min: 1, max: 4 }), fc.constantFrom(...PET_IDS)).map(([z, id]) => '0'.repeat(z) + id) },
  { weight: 1, arbitrary: oddText.filter((s) => s.length > 0) },
);

const segment = fc.oneof(
  fc.constantFrom(
    'v1',
    'V1',
    'inventory',
    'Inventory',
    'INVENTORY',
    '',
    '.',
    '..',
    '%2e',
    '%2E%2E',
    '%2F',
    '%2f',
    '%5C',
    '\\',
    '%00',
    '%zz',
    '%',
    ';',
    ';x=1',
    'healthz',
    'readyz',
    'openapi.json',
    'v2',
    '~',
    '*',
    '%76%31',
  ),
  idArb,
  oddText,
);

const PATHS = [
  '/v1/inventory',
  '/v1/inventory/',
  '/v1/inventory?x=1',
  '/v1',
  '/v1/',
  '/',
  '/healthz',
  '/readyz',
  '/openapi.json',
  '/V1/inventory',
  '//v1/inventory',
  '/v1//inventory',
  '/v1/./inventory',
  '/v1/../v1/inventory',
  '/v1/inventory/7/',
  '/v1/inventory/7/8',
  '/v1/inventory/7?quantity=1',
  '/v1%2Finventory',
  '/%76%31/inventory',
  '/v1/inventory%2F7',
  '/v1/inventory/7#frag',
  '*',
  '/v1/inventory/../inventory/7',
  '/v1/inventory/%2e%2e/7',
  '/healthz/',
  '/HEALTHZ',
  '/v1/openapi.json',
];

export const pathArb: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...PET_IDS).map((id) => `/v1/inventory/${id}`) },
  { weight: 5, arbitrary: idArb.map((id) => `/v1/inventory/${encodeSegment(id)}`) },
  { weight: 2, arbitrary: fc.constantFrom(...PATHS) },
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.constantFrom('/v1/', '/', '//', '/v1/inventory/'), fc.array(segment, { maxLength: 6 }))
      .map(([p, s]) => encodeTarget(p + s.join('/'))),
  },
  {
    // A few KB of path (well under node's 16 KiB header limit).
    weight: 1,
    arbitrary: fc
      .tuple(
        fc.constantFrom('/v1/inventory/', '/v1/', '/'),
        fc.integer({ min: 1000, max: 6000 }),
        fc.constantFrom('a', '7', '/', '%2F', '../', 'é', '%zz'),
      )
      .map(([p, n, c]) => encodeTarget(p + c.repeat(Math.ceil(n / Math.max(1, utf8AsLatin1(encodeTarget(c)).length))))),
  },
  { weight: 1, arbitrary: oddText.map((s) => encodeTarget(`/${s}`)) },
  {
    weight: 1,
    arbitrary: fc.tuple(fc.constantFrom('/v1/inventory', '/v1/inventory/7'), oddText).map(([p, q]) => encodeTarget(`${p}?${q}`)),
  },
);

/** Authorization values that never carry a valid key ({KEY} filled in later). */
export const BAD_CREDENTIALS = [
  '',
  'Bearer',
  'Bearer ',
  'Basic dXNlcjpwYXNz',
  'Token {KEY}',
  '{KEY}',
  'Bearer {KEY}x',
  'Bearer x{KEY}',
  'Bearer {KEY} extra',
  'Bearer {KEY},{KEY}',
  'Bearer {KEY_CUT}',
  'Bearer {KEY_CASE}',
  'Bearer\t{KEY}',
  'Bearer "{KEY}"',
  'Bearer={KEY}',
  'Bearer pinv_0000000000000000000000000000',
  'Bearer ====',
  'Bearer a/b+c==',
];

export const schemeArb = fc.constantFrom('Bearer', 'bearer', 'BEARER', 'bEaReR', 'BeArEr');
/** 70% a valid key (any case of the scheme), else absent, empty, another scheme, garbage. */
export const authArb: fc.Arbitrary<string | undefined> = fc.oneof(
  {
    weight: 14,
    arbitrary: fc
      .tuple(schemeArb, fc.constantFrom(' ', '  ', ' ', ' '), fc.constantFrom('', ' '))
      .map(([s, sep, pad]) => `${pad}${s}${sep}{KEY}${pad}`),
  },
  { weight: 2, arbitrary: fc.constant(undefined) },
  {
    weight: 4,
    arbitrary: fc.oneof(
      fc.constantFrom(...BAD_CREDENTIALS),
      fc.tuple(schemeArb, headerValue(60)).map(([s, v]) => `${s} ${v}`),
      headerValue(60),
    ),
  },
);

export const contentTypeArb: fc.Arbitrary<string | undefined> = fc.oneof(
  { weight: 10, arbitrary: fc.constant('application/json') },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      'application/json; charset=utf-8',
      'application/json;charset=UTF-8',
      'APPLICATION/JSON',
      'application/json; charset="utf-8"',
      'application/json; charset=utf8',
    ),
  },
  { weight: 2, arbitrary: fc.tuple(fc.stringMatching(/^[a-z]{1,8}$/), headerValue(20)).map(([k, v]) => `application/json; ${k}=${v}`) },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      'text/plain',
      '',
      'application/x-www-form-urlencoded',
      'application/merge-patch+json',
      'application/jsonx',
      'application/json; charset=latin1',
      'application/json; charset=utf-16',
      'application/json; foo',
      'application/json;',
      '*/*',
      'json',
      'application/*',
      ';',
      'multipart/form-data; boundary=x',
      'application/json, text/plain',
      'text/json',
    ),
  },
  { weight: 1, arbitrary: headerValue(80) },
  { weight: 1, arbitrary: fc.integer({ min: 1000, max: 4000 }).map((n) => `application/json; x=${'a'.repeat(n)}`) },
  { weight: 2, arbitrary: fc.constant(undefined) },
);

/** `arb` in `percent` of the cases, else undefined. */
export function sometimes<T>(arb: fc.Arbitrary<T>, percent: number): fc.Arbitrary<T | undefined> {
  return fc.oneof({ weight: 100 - percent, arbitrary: fc.constant(undefined) }, { weight: percent, arbitrary: arb });
}

export const requestIdArb = sometimes(
  fc.oneof(
    fc.stringMatching(/^[A-Za-z0-9._:-]{1,128}$/),
    headerValue(40),
    fc.constantFrom('a'.repeat(128), 'a'.repeat(129), '', ' ', '../../etc', '<script>'),
  ),
  50,
);

export const ifMatchArb = sometimes(
  fc.oneof(
    fc.constantFrom('*', '"{VER}"', '"{VER+1}"', '"{VER-1}"', 'W/"{VER}"', '"x", "{VER}"', '"{VER}" garbage', '""', '"', 'garbage', '"0"'),
    headerValue(30),
  ),
  20,
);

export const ifNoneMatchArb = sometimes(fc.oneof(fc.constantFrom('*', '{LIST}', 'W/{LIST}', '"x", {LIST}', '"nope"'), headerValue(30)), 20);

export const RESERVED_HEADERS = new Set([
  'content-length',
  'transfer-encoding',
  'authorization',
  'content-type',
  'connection',
  'upgrade',
  'expect',
  'x-request-id',
  'if-match',
  'if-none-match',
  'te',
  'trailer',
  'keep-alive',
  'content-encoding',
  'host',
]);

export const extraHeaderArb: fc.Arbitrary<[string, string]> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.tuple(
      tokenName.filter((n) => !RESERVED_HEADERS.has(n.toLowerCase())),
      headerValue(),
    ),
  },
  // Anything but 100-continue is answered 417 (node-server.ts's checkExpectation).
  {
    weight: 1,
    arbitrary: fc.tuple(fc.constant('Expect'), fc.constantFrom('100-continue', '100-Continue', '100-continue', '100-continue', 'foo', '')),
  },
  {
    weight: 1,
    arbitrary: fc.tuple(
      fc.constant('Content-Encoding'),
      fc.constantFrom('gzip', 'deflate', 'br', 'identity', 'x-gzip', 'compress', 'gzip, gzip', 'IDENTITY', ''),
    ),
  },
  {
    weight: 1,
    arbitrary: fc.tuple(fc.constant('Host'), fc.oneof(headerValue(), fc.constantFrom('', 'localhost', '[::1]', 'a'.repeat(300)))),
  },
  {
    weight: 2,
    arbitrary: fc.tuple(
      fc.constantFrom(
        'Accept',
        'Accept-Encoding',
        'Cookie',
        'Origin',
        'Range',
        'X-HTTP-Method-Override',
        'X-Forwarded-Proto',
        'Forwarded',
        'If-Modified-Since',
        'If-Unmodified-Since',
        'Cache-Control',
        'X-Original-URL',
        'Accept-Charset',
      ),
      headerValue(),
    ),
  },
);
