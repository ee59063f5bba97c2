// scripts/audit's usage errors and --help, end to end on every store (test/kit/audit.ts).
import * as assert from 'uvu/assert';
import { auditSuite, audit, expectExit, seedFixture } from '../kit/audit.ts';

const test = auditSuite('scripts/audit: usage');

test('usage errors exit 2 with one error line and see --help, nothing on stdout; --help exits 0', async (ctx) => {
  await seedFixture(ctx);
  const cases: [string[], RegExp][] = [
    [['--format', 'xml'], /--format must be table, csv, jsonl, not "xml"/],
    [['--pet', 'abc'], /--pet: invalid PETID "abc"/],
    [['--pet', '007'], /--pet: invalid PETID/],
    [['--pet', '9223372036854775808'], /--pet: invalid PETID/],
    [['--since', 'yesterday'], /--since: invalid TIME "yesterday"/],
    [['--since', '2026-02-30'], /--since: invalid TIME/],
    [['--since', '2026-11-21T10:00:00'], /a time of day needs Z or an offset/],
    [['--since', '2026-11-21T24:00:00Z'], /--since: invalid TIME/],
    [['--until', '2026-11-21 10:00:00Z'], /--until: invalid TIME/],
    [['--until', '9999-12-31T23:00:00-02:00'], /--until: invalid TIME/],
    [['--since', '2026-11-21T10:00:00+2'], /--since: invalid TIME/],
    [['--since', '2026-11-21T10:00:00+02:0'], /--since: invalid TIME/],
    [['--since', '2026-11-21T10:00:00+24:00'], /--since: invalid TIME/],
    [['--since', '2026-11-21T10:00:00+02:00:00'], /--since: invalid TIME/],
    [['--since', '2026-11-21T10:00:00.Z'], /--since: invalid TIME/],
    [['--since', '2026-11-21T10:00:00.1234567891Z'], /--since: invalid TIME/],
    [['--since'], /^error: --since needs a value\n/],
    [['--format', 'csv', '--limit', '3'], /^error: unknown option --limit\n/],
    [['--pet', '-1'], /^error: --pet -1: a value that starts with "-" must be written --pet=-1\n/],
    [['--actor', ''], /--actor must not be empty/],
    [['extra'], /unexpected argument "extra"/],
  ];
  const results = await Promise.all(cases.map(([args]) => audit([...args, '--db', ctx.db])));
  for (const [i, [args, message]] of cases.entries()) {
    const r = results[i]!;
    expectExit(r, 2, `audit ${args.join(' ')}`);
    assert.match(r.stderr, message, args.join(' '));
    assert.match(r.stderr, /^error: [^\n]+\nsee --help\n$/, args.join(' '));
    assert.not.match(r.stderr, /Option '|ERR_|ambiguous/, args.join(' '));
    assert.is(r.stdout, '', args.join(' '));
  }
  for (const [what, args, env] of [
    ['--db ""', ['--db', ''], {}],
    ['INVENTORY_DB=""', [], { INVENTORY_DB: '' }],
  ] as const) {
    const r = await audit([...args], { ...env });
    expectExit(r, 2, `audit with ${what}`);
    assert.match(r.stderr, /^error: [^\n]*must not be empty\nsee --help\n$/, what);
  }
  const help = await audit(['--help']);
  expectExit(help, 0, 'audit --help');
  assert.match(help.stdout, /^Usage: scripts\/audit \[--pet PETID\]/);
  assert.match(help.stdout, /Exit status: 0 success \(also when no row matches\), 1 failure, 2 usage error/);
});

test.run();
