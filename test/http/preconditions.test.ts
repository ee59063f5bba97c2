// The conditional-request rules (RFC 9110 section 13) as a table: for each If-Match /
// If-None-Match pair and a current tag, what a read (GET/HEAD) and a write (PATCH) get.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import {
  judgeRead,
  judgeWrite,
  parseTagCondition,
  readConditions,
  type ReadVerdict,
  type WriteVerdict,
} from '../../src/http/input/preconditions.ts';

const CURRENT = '"3"';

// [If-Match, If-None-Match, read verdict, write verdict]; undefined: the header is absent.
const CASES: [string | undefined, string | undefined, ReadVerdict, WriteVerdict][] = [
  [undefined, undefined, 'proceed', 'proceed'],
  // If-Match: strong comparison; * matches an entry that exists; a list when any member does.
  ['"3"', undefined, 'proceed', 'proceed'],
  ['"2"', undefined, 'if-match-failed', 'if-match-failed'],
  ['*', undefined, 'proceed', 'proceed'],
  [' * ', undefined, 'proceed', 'proceed'],
  ['"9", "3"', undefined, 'proceed', 'proceed'],
  ['"9","3"', undefined, 'proceed', 'proceed'],
  ['"9" ,\t"3"', undefined, 'proceed', 'proceed'],
  ['"9", , "3",', undefined, 'proceed', 'proceed'],
  ['"9", "8"', undefined, 'if-match-failed', 'if-match-failed'],
  ['W/"3"', undefined, 'if-match-failed', 'if-match-failed'],
  ['W/"3", "3"', undefined, 'proceed', 'proceed'],
  // Empty, malformed or half-readable: never a match.
  ['', undefined, 'if-match-failed', 'if-match-failed'],
  [' ', undefined, 'if-match-failed', 'if-match-failed'],
  [',', undefined, 'if-match-failed', 'if-match-failed'],
  ['3', undefined, 'if-match-failed', 'if-match-failed'],
  ['"3', undefined, 'if-match-failed', 'if-match-failed'],
  ['"3" garbage', undefined, 'if-match-failed', 'if-match-failed'],
  ['"3" "3"', undefined, 'if-match-failed', 'if-match-failed'],
  ['*, "3"', undefined, 'if-match-failed', 'if-match-failed'],
  ['w/"3"', undefined, 'if-match-failed', 'if-match-failed'],
  ['"3 "', undefined, 'if-match-failed', 'if-match-failed'],
  ['""', undefined, 'if-match-failed', 'if-match-failed'],
  // If-None-Match: weak comparison; a match is 304 for a read, 412 for a write.
  [undefined, '"3"', 'not-modified', 'if-none-match-failed'],
  [undefined, 'W/"3"', 'not-modified', 'if-none-match-failed'],
  [undefined, '*', 'not-modified', 'if-none-match-failed'],
  [undefined, '"1", W/"3"', 'not-modified', 'if-none-match-failed'],
  [undefined, '"2"', 'proceed', 'proceed'],
  [undefined, '"2", "4"', 'proceed', 'proceed'],
  // Malformed or empty: a read gets the full answer, a write is refused.
  [undefined, '', 'proceed', 'if-none-match-failed'],
  [undefined, 'garbage', 'proceed', 'if-none-match-failed'],
  [undefined, '"3" x', 'proceed', 'if-none-match-failed'],
  // Both: If-Match is judged first (RFC 9110 13.2.2).
  ['"3"', '"3"', 'not-modified', 'if-none-match-failed'],
  ['"2"', '"3"', 'if-match-failed', 'if-match-failed'],
  ['"3"', '"2"', 'proceed', 'proceed'],
  ['*', '*', 'not-modified', 'if-none-match-failed'],
  ['', '"2"', 'if-match-failed', 'if-match-failed'],
];

const table = suite('preconditions: the table');

for (const [ifMatch, ifNoneMatch, read, write] of CASES) {
  const headers: Record<string, string> = {};
  if (ifMatch !== undefined) headers['if-match'] = ifMatch;
  if (ifNoneMatch !== undefined) headers['if-none-match'] = ifNoneMatch;
  table(`If-Match ${JSON.stringify(ifMatch)}, If-None-Match ${JSON.stringify(ifNoneMatch)}: read ${read}, write ${write}`, () => {
    const conditions = readConditions(headers);
    assert.is(judgeRead(conditions, CURRENT), read, 'read');
    assert.is(judgeWrite(conditions, CURRENT), write, 'write');
  });
}

table('a weak current tag never satisfies If-Match, but satisfies If-None-Match', () => {
  assert.is(judgeRead(readConditions({ 'if-match': '"3"' }), 'W/"3"'), 'if-match-failed');
  assert.is(judgeRead(readConditions({ 'if-none-match': '"3"' }), 'W/"3"'), 'not-modified');
});

table('repeated header lines (an array) form one list', () => {
  assert.is(judgeWrite(readConditions({ 'if-match': ['"1"', '"3"'] }), CURRENT), 'proceed');
});

table('parseTagCondition keeps each tag and whether it is weak', () => {
  assert.equal(parseTagCondition('"a", W/"b"'), {
    kind: 'tags',
    tags: [
      { weak: false, opaque: 'a' },
      { weak: true, opaque: 'b' },
    ],
  });
  assert.equal(parseTagCondition('*'), { kind: 'any' });
  assert.equal(parseTagCondition(''), { kind: 'malformed' });
});

table.run();
