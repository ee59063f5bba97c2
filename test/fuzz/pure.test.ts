// Properties of the pure pieces hostile input reaches first: the pet id parser and the
// duplicate-member check of the strict JSON reader.
import fc from 'fast-check';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { parsePetId } from '../../src/domain/events.ts';
import { duplicateMember } from '../../src/json/strict-json.ts';
import { SPECIAL_IDS } from './generators.ts';
import { MAX, TWO_53, TWO_63, runs } from './setup.ts';
const pure = suite('fuzz: pure pieces');

const petIdText = fc.oneof(
  fc.string(),
  fc.string({ unit: 'binary' }),
  fc.stringMatching(/^[0-9]{1,21}$/),
  fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }).map(String),
  fc.bigInt({ min: 1n, max: MAX }).map(String),
  fc.integer({ min: -3, max: 3 }).map((d) => String(TWO_63 + BigInt(d))),
  fc.integer({ min: -3, max: 3 }).map((d) => String(TWO_53 + BigInt(d))),
  fc
    .tuple(
      fc.bigInt({ min: 0n, max: MAX }),
      fc.constantFrom('', ' ', '\n', 'e0', '.0', 'n', '\u0000'),
      fc.constantFrom('', '0', '+', '-', ' ', '\ufeff'),
    )
    .map(([b, suffix, prefix]) => `${prefix}${b}${suffix}`),
  fc.constantFrom(...SPECIAL_IDS),
);

pure('parsePetId: undefined, or a BigInt whose decimal text is the input, from 1 to int64 max', () => {
  fc.assert(
    fc.property(petIdText, (s) => {
      const b = parsePetId(s);
      const canonical = /^[1-9][0-9]*$/.test(s) && BigInt(s) <= MAX;
      if (b === undefined) {
        assert.not.ok(canonical, `a canonical id is accepted: ${s}`);
        return;
      }
      assert.ok(typeof b === 'bigint', 'a BigInt');
      assert.is(String(b), s);
      assert.ok(b >= 1n && b <= MAX, `in range: ${s}`);
    }),
    runs(3000),
  );
});

pure('duplicateMember: nothing in what JSON.stringify writes, compact or indented', () => {
  fc.assert(
    fc.property(fc.json(), fc.constantFrom(undefined, 2, '\t'), (text, indent) => {
      const value = JSON.parse(text) as unknown;
      assert.is(duplicateMember(text), undefined, text);
      assert.is(duplicateMember(JSON.stringify(value, null, indent)), undefined, text);
    }),
    runs(1500),
  );
});

const escapeAll = (name: string) =>
  `"${[...Array(name.length).keys()].map((i) => `\\u${name.charCodeAt(i).toString(16).padStart(4, '0')}`).join('')}"`;

pure('duplicateMember: a member written twice into an object is found, however it is nested or spelled', () => {
  fc.assert(
    fc.property(
      fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 2 }), { minKeys: 1, maxKeys: 6 }),
      fc.nat(),
      fc.nat(),
      fc.jsonValue({ maxDepth: 2 }),
      fc.boolean(),
      fc.constantFrom('', ' ', '\n\t '),
      fc.constantFrom(
        '@',
        '[1,@]',
        '{"a":@}',
        '[[{"x":[@]}]]',
        '{"x":{"y":1},"z":@}',
        '[{"x":1},{"x":@}]',
        '{"s":"{\\"k\\":1,\\"k\\":2}","v":@}',
      ),
      (dict, pick, position, duplicateValue, escaped, ws, wrapper) => {
        const names = Object.keys(dict);
        const name = names[pick % names.length]!;
        const members = names.map((n) => `${JSON.stringify(n)}${ws}:${ws}${JSON.stringify(dict[n])}`);
        const again = `${escaped ? escapeAll(name) : JSON.stringify(name)}${ws}:${ws}${JSON.stringify(duplicateValue)}`;
        members.splice(position % (members.length + 1), 0, again);
        const text = wrapper.replace('@', () => `{${ws}${members.join(`${ws},${ws}`)}${ws}}`);
        JSON.parse(text); // the scan is only ever given text JSON.parse accepted
        assert.is(duplicateMember(text), name, text);
      },
    ),
    runs(1500),
  );
});

pure.run();
