// Generators of PATCH bodies: numbers at and past every bound, valid bodies, and JSON-ish
// text that is not quite a valid body.
import fc from 'fast-check';
import { oddText } from './generators.ts';
import { LIMIT } from './setup.ts';
const SPECIAL_NUMBERS = [
  '1e400',
  '-1e400',
  '123456789012345678901234567890',
  '-0',
  '1e-400',
  '0.0',
  '5.0',
  '1E3',
  '2147483647',
  '2147483648',
  '-1',
  '9007199254740993',
  '0x10',
  'NaN',
  'Infinity',
  '01',
  '.5',
  '5.',
  '+1',
  '-',
  '1e',
  '5.0000000000000001',
  '2147483647.0000001',
  '0e0',
  '-0.0',
  '4294967296',
  '-2147483648',
];

const quantityValueArb = fc.oneof(
  { weight: 4, arbitrary: fc.integer({ min: 0, max: 2147483647 }).map(String) },
  { weight: 3, arbitrary: fc.constantFrom(...SPECIAL_NUMBERS) },
  { weight: 2, arbitrary: fc.json({ maxDepth: 2 }) },
  { weight: 1, arbitrary: fc.double().map((d) => JSON.stringify(d)) },
  { weight: 1, arbitrary: fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }).map(String) },
  { weight: 1, arbitrary: oddText.map((s) => JSON.stringify(s)) },
);

/** A valid quantity as written, and the number it is. */
const validQuantityArb: fc.Arbitrary<[string, number]> = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: 0, max: 2147483647 }).map((q): [string, number] => [String(q), q]) },
  {
    weight: 3,
    arbitrary: fc
      .tuple(fc.integer({ min: 0, max: 2147483647 }), fc.constantFrom('.0', 'e0', 'E0', '.000', 'e+0', 'e-0', '.0e0'))
      .map(([q, s]): [string, number] => [`${q}${s}`, q]),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom<[string, number]>(
      ['-0', 0],
      ['0.0', 0],
      ['-0.0', 0],
      ['0e5', 0],
      ['1e3', 1000],
      ['2147483647.0', 2147483647],
      ['2.147483647e9', 2147483647],
    ),
  },
);

export const validBodyArb = fc
  .tuple(
    validQuantityArb,
    fc.constantFrom('{"quantity":@}', '{ "quantity" : @ }', '\n{"quantity":\t@}\r\n', '{"\\u0071uantity":@}', '\ufeff{"quantity":@}'),
  )
  .map(([[written, value], shape]) => ({ text: shape.replace('@', () => written), quantity: value }));

export const nested = (depth: number, inner = '') => '['.repeat(depth) + inner + ']'.repeat(depth);

/** A body as text; `latin1` bodies are byte strings (invalid UTF-8, raw NUL…). */
export interface BodyCase {
  text: string;
  latin1?: boolean;
  chunked?: boolean;
  gzip?: boolean;
}

/** Bodies that are no InventoryUpdate at all: empty, an empty object, not an object. */
export const NOT_A_BODY = ['', '{}', '[]', 'null', '5', '"quantity"'];

export const jsonishBody: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: validBodyArb.map((b) => b.text) },
  { weight: 6, arbitrary: quantityValueArb.map((v) => `{"quantity":${v}}`) },
  { weight: 2, arbitrary: fc.json() },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      ...NOT_A_BODY,
      '{"quantity":1,"quantity":2}',
      '{"quantity":1,"\\u0071uantity":1}',
      '{"quantity":1,"__proto__":{"x":1}}',
      '{"__proto__":{"quantity":1}}',
      '{"quantity":1,"constructor":{"prototype":{}}}',
      '{"constructor":1,"quantity":1}',
      '{"quantity":"\\ud800"}',
      '{"\\u0000":1}',
      '{"quantity":1,"x":"\\u0000"}',
      '{"quantity":1,"x":"\u0000"}',
      '{"quantity":1}\u0000',
      '\ufeff{"quantity":1}',
      '\ufeff\ufeff{"quantity":1}',
      '{quantity:1}',
      "{'quantity':1}",
      'quantity=1',
      '   ',
      'prototype',
      '{"quantity":1}{"quantity":2}',
      '{"quantity":1}}',
    ),
  },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 2040 }).map((d) => `{"quantity":${nested(d)}}`) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(nested(10000), `{"quantity":${nested(10000)}}`, nested(2047), '{"a":'.repeat(600) + '1' + '}'.repeat(600)),
  },
  { weight: 1, arbitrary: fc.tuple(fc.json(), fc.nat()).map(([s, k]) => s.slice(0, k % Math.max(1, s.length))) },
  {
    // Around the 4 KiB limit: ASCII padding, or multi-byte characters across it.
    weight: 2,
    arbitrary: fc.tuple(fc.integer({ min: -8, max: 8 }), fc.constantFrom(' ', 'é', '\u{1F600}')).map(([d, c]) => {
      const base = c === ' ' ? '{"quantity":1' : '{"quantity":1,"x":"';
      const end = c === ' ' ? '}' : '"}';
      const target = LIMIT + d - Buffer.byteLength(base + end);
      return (
        base +
        c.repeat(Math.max(0, Math.floor(target / Buffer.byteLength(c)))) +
        ' '.repeat(Math.max(0, target % Buffer.byteLength(c))) +
        end
      );
    }),
  },
  { weight: 1, arbitrary: fc.tuple(fc.json(), fc.json()).map(([k, v]) => `{"quantity":1,${JSON.stringify(k)}:${v}}`) },
  { weight: 1, arbitrary: oddText },
);

export const bodyArb: fc.Arbitrary<BodyCase> = fc.oneof(
  { weight: 8, arbitrary: fc.record({ text: jsonishBody, chunked: fc.boolean() }) },
  {
    // Invalid UTF-8 and raw bytes, as bytes.
    weight: 2,
    arbitrary: fc
      .tuple(
        fc.constantFrom('{"quantity":1,"x":"@"}', '{"quantity":"@"}', '{"quantity":1@}', '@{"quantity":1}', '{"@":1}', '@'),
        fc.uint8Array({ minLength: 1, maxLength: 8 }),
        fc.boolean(),
      )
      .map(([shape, bytes, chunked]) => ({ text: shape.replace('@', () => Buffer.from(bytes).toString('latin1')), latin1: true, chunked })),
  },
  {
    // A valid body, gzipped (Content-Encoding: gzip is added with it).
    weight: 1,
    arbitrary: fc.integer({ min: 0, max: 2147483647 }).map((q) => ({ text: `{"quantity":${q}}`, gzip: true })),
  },
);
