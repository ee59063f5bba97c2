// The one JSON judgement that PATCH bodies and scripts/track files share: a strict reader
// that refuses a repeated member and keeps each number's literal, and the integer
// judgement of a literal as written.
import fc from 'fast-check';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { readNumberLiteral, integerInRange } from '../../src/json/json-number.ts';
import { readStrictJson, type JsonNode } from '../../src/json/strict-json.ts';

/** The plain value a node stands for, numbers as their literal text. */
function plain(node: JsonNode): unknown {
  switch (node.kind) {
    case 'null':
      return null;
    case 'boolean':
    case 'string':
      return node.value;
    case 'number':
      return { n: node.literal };
    case 'array':
      return node.items.map(plain);
    case 'object':
      return [...node.members].map(([k, v]) => [k, plain(v)]);
  }
}

const reader = suite('readStrictJson');

reader('reads objects, arrays and scalars, keeping numbers as written', () => {
  const r = readStrictJson(
    ' {"a": [1, 5.0, -0, 1e3, 2147483647.0000001, 9223372036854775807], "b": {"__proto__": null}, "c": "x\\u0041", "d": true}\n',
  );
  assert.ok(r.ok);
  assert.equal(plain(r.value), [
    ['a', [{ n: '1' }, { n: '5.0' }, { n: '-0' }, { n: '1e3' }, { n: '2147483647.0000001' }, { n: '9223372036854775807' }]],
    ['b', [['__proto__', null]]],
    ['c', 'xA'],
    ['d', true],
  ]);
  assert.equal(readStrictJson('\ufeff[]'), { ok: true, value: { kind: 'array', items: [] } }, 'a byte order mark is ignored');
  assert.equal(
    readStrictJson('\ufeff[]', { byteOrderMark: false }),
    { ok: false, problem: 'malformed', reason: 'expected a value, found "\ufeff" at line 1, column 1' },
    'unless the caller dropped one already',
  );
});

reader('a member named twice in one object is reported, however spelled or nested', () => {
  assert.equal(readStrictJson('[{"petId":20,"petId":21}]'), { ok: false, problem: 'duplicate', member: 'petId', at: 'line 1, column 14' });
  assert.equal(readStrictJson('{"quantity":1,\n "\\u0071uantity":1}'), {
    ok: false,
    problem: 'duplicate',
    member: 'quantity',
    at: 'line 2, column 2',
  });
  assert.equal(readStrictJson('{"a":{"x":1},"b":{"x":2}}').ok, true, 'the same name in two objects is no duplicate');
  assert.equal(readStrictJson('{"s":"{\\"k\\":1,\\"k\\":2}"}').ok, true, 'a name inside a string is no member');
});

reader('malformed text is refused with the place, in words', () => {
  const cases: [string, RegExp][] = [
    ['', /expected a value, found the end of the text at line 1, column 1/],
    ['[1,]', /expected a value, found "]"/],
    ['{"a" 1}', /expected ":"/],
    ['[1 2]', /expected "," or "]", found "2"/],
    ['{a:1}', /member name in double quotes/],
    ['[01]', /expected "," or "]", found "1"/],
    ['[.5]', /expected a value, found "."/],
    ['[1.]', /expected "," or "]", found "."/],
    ['"a\tb"', /raw control character/],
    ['"abc', /never ends/],
    ['[]x', /unexpected "x" after the JSON value/],
    ['[\n  1,\n  nul]', /line 3, column 3/],
    ['[NaN]', /found "N"/],
  ];
  for (const [text, reason] of cases) {
    const r = readStrictJson(text);
    assert.is(r.ok, false, text);
    if (!r.ok) {
      assert.is(r.problem, 'malformed', text);
      if (r.problem === 'malformed') assert.match(r.reason, reason, text);
    }
  }
});

reader('a file nested a million levels deep is an answer, not a stack overflow', () => {
  const deep = '['.repeat(1_000_000) + ']'.repeat(1_000_000);
  assert.is(readStrictJson(deep).ok, true);
  assert.is(readStrictJson('['.repeat(1_000_000)).ok, false);
});

reader('agrees with JSON.parse on what is JSON (duplicates aside)', () => {
  fc.assert(
    fc.property(fc.json(), (text) => {
      const r = readStrictJson(text);
      assert.ok(r.ok, text);
    }),
    { numRuns: 1000 },
  );
  fc.assert(
    fc.property(fc.string({ maxLength: 12 }), (text) => {
      let parses = true;
      try {
        JSON.parse(text);
      } catch {
        parses = false;
      }
      const r = readStrictJson(text);
      if (!parses) assert.is(r.ok, false, text);
      else assert.ok(r.ok || r.problem === 'duplicate', text);
    }),
    { numRuns: 3000 },
  );
});

reader.run();

const numbers = suite('readNumberLiteral');

numbers('integers as written, exactly; fractions even where JSON.parse rounds', () => {
  const integers: [string, bigint][] = [
    ['0', 0n],
    ['-0', 0n],
    ['0.0', 0n],
    ['-0.0', 0n],
    ['0e5', 0n],
    ['5.0', 5n],
    ['1e3', 1000n],
    ['1E+3', 1000n],
    ['2.147483647e9', 2147483647n],
    ['100e-2', 1n],
    ['-3', -3n],
    ['9007199254740993', 9007199254740993n],
    ['9223372036854775807', 9223372036854775807n],
    ['9223372036854775807.000', 9223372036854775807n],
  ];
  for (const [literal, value] of integers) assert.equal(readNumberLiteral(literal), { kind: 'integer', value }, literal);
  for (const literal of ['5.0000000000000001', '1e-400', '2147483647.0000001', '1.55e1', '0.5', '-0.1', '2147483646.99999999999']) {
    assert.equal(readNumberLiteral(literal), { kind: 'fraction' }, literal);
  }
  assert.equal(readNumberLiteral('1e400'), { kind: 'huge', negative: false });
  assert.equal(readNumberLiteral('-1e99999999999999999999'), { kind: 'huge', negative: true });
});

numbers('integerInRange: fraction or out of range, in words the callers can use', () => {
  assert.equal(integerInRange('2147483647.0', 0n, 2147483647n), { ok: true, value: 2147483647n });
  assert.equal(integerInRange('2147483648', 0n, 2147483647n), { ok: false, why: 'range' });
  assert.equal(integerInRange('2147483647.0000001', 0n, 2147483647n), { ok: false, why: 'fraction' });
  assert.equal(integerInRange('1e400', 0n, 2147483647n), { ok: false, why: 'range' });
});

numbers('agrees with Number on which doubles are integers, and on their value', () => {
  fc.assert(
    fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }), (d) => {
      const literal = JSON.stringify(d);
      const reading = readNumberLiteral(literal);
      if (Number.isInteger(d)) {
        // The literal's exact value rounds to the double (17 digits may name a neighbour of it).
        if (reading.kind === 'huge') assert.ok(Math.abs(d) >= 1e100 && reading.negative === d < 0, literal);
        else assert.is(reading.kind, 'integer', literal);
        if (reading.kind === 'integer') assert.is(Number(reading.value), d === 0 ? 0 : d, literal);
      } else {
        assert.is(reading.kind, 'fraction', literal);
      }
    }),
    { numRuns: 3000 },
  );
});

numbers.run();
