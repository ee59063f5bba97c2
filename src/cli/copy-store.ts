// scripts/copy-store: move a store's whole history into a new, empty one (from SQLite to
// PostgreSQL when the service outgrows one machine; back to a SQLite file for an offline
// copy or a move back to one host), verbatim, then prove it by the hash chain: both logs
// must verify to the same digest.
import { formatDigest } from '../store/hash-chain.ts';
import { describeTarget, openStore } from '../store/open.ts';
import { brokenAt, verifyLog, type Verdict } from '../application/verify/verify-log.ts';
import { parse, run, UsageError } from './common.ts';

const USAGE = `
Usage: scripts/copy-store --from PATH|URL --to PATH|URL

Copies every event (seq, times, actors, request ids and hashes as they are), every API
key (its hash only: keys keep working, none is shown), the unexpired answers stored for
Idempotency-Keys (retries after the move are replayed; not covered by the hash chain)
and the projection replayed from the events, from one store into an EMPTY one, in one
transaction on the target: all of it or nothing. Either may be a SQLite file or a
PostgreSQL database, both must have the current schema: run scripts/migrate --db PATH|URL
on the new one first. Stop writes to the source while copying (stop the service), or
writes made meanwhile are not copied. Then checks the hash chain of both and prints both
digests: they must be equal.
  --from PATH|URL   the store to copy (read-only): a SQLite file or a postgres:// URL
  --to PATH|URL     the empty store to fill: a SQLite file or a postgres:// URL
  -h, --help        this text

Exit status: 0 copied and the digests are equal, 1 failure (nothing copied) or the
digests differ, 2 usage error.
`;

const count = (n: number, what: string) => `${n} ${what}${n === 1 ? '' : 's'}`;

function verdictLine(name: string, verdict: Verdict): string {
  return verdict.ok
    ? `${name}: ${verdict.events} events, chain intact, digest ${formatDigest(verdict.head)}\n`
    : `${name}: BROKEN at ${brokenAt(verdict)}: ${verdict.reason}\n`;
}

await run(USAGE, async (argv) => {
  const { values, positionals } = parse(argv, { from: { type: 'string' }, to: { type: 'string' } });
  if (positionals.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(positionals[0])}`);
  if (values.db !== undefined) throw new UsageError('copy-store takes --from and --to, not --db');
  const from = typeof values.from === 'string' ? values.from : '';
  const to = typeof values.to === 'string' ? values.to : '';
  if (from.trim() === '') throw new UsageError('--from is required: the store to copy');
  if (to.trim() === '') throw new UsageError('--to is required: the empty store to fill');
  if (from === to) throw new UsageError('--from and --to name the same store');

  const source = await openStore(from, { readonly: true, mustExist: true, listen: false });
  try {
    // Checked before anything is read: a broken source is not worth copying.
    const before = await verifyLog(source);
    if (!before.ok) throw new Error(`the source's log is broken at seq ${before.seq} (${before.reason}): nothing was copied`);
    const target = await openStore(to, { mustExist: true, listen: false });
    try {
      const { events: keyEvents, keys } = await source.keyHistory();
      const copied = await target.importHistory({
        events: source.chainRows(),
        keys,
        keyEvents,
        logId: (await source.logHead()).logId,
        idempotency: source.idempotency.unexpired(new Date().toISOString()),
      });
      process.stderr.write(
        `copied ${count(copied.events, 'event')}, ${count(copied.keys, 'key')} and ${count(copied.entries, 'inventory row')} ` +
          `from ${describeTarget(from)} to ${describeTarget(to)}\n`,
      );
      // Not part of the chain (the digests below do not cover them): said on a line of its own.
      if (copied.idempotency > 0) {
        process.stderr.write(
          `copied ${count(copied.idempotency, 'unexpired idempotency record')}: PATCHes answered before the move are replayed after it\n`,
        );
      }
      const [a, b] = [await verifyLog(source), await verifyLog(target)];
      process.stdout.write(verdictLine('source', a) + verdictLine('target', b));
      const equal = a.ok && b.ok && formatDigest(a.head) === formatDigest(b.head) && formatDigest(a.keyHead) === formatDigest(b.keyHead);
      process.stdout.write(equal ? 'digests equal\n' : 'digests DIFFER\n');
      return equal ? 0 : 1;
    } finally {
      await target.close();
    }
  } finally {
    await source.close();
  }
});
