// scripts/rebuild-projection: replay every event into a fresh projection.
import { rebuildProjection, shownEntry, type Difference } from '../application/verify/rebuild.ts';
import { openExistingStore, parse, run, UsageError } from './common.ts';
import { progressBar } from './progress.ts';

const USAGE = `
Usage: scripts/rebuild-projection [--check] [--db PATH|URL]

Replays every event of the log, in order, into a fresh projection (the inventory table
behind GET /v1/inventory) and replaces the old one atomically: readers see the old one
until the new one is complete. Reports the events replayed, the entries written, and
every entry that differed. The stock_adjustments table is compared with the events too,
and rows that differ are put right (verify-log reports them as BROKEN). The stored answers of Idempotency-Keys (idempotency_keys) are
left as they are: they are answers given, not state derived from the events, so retries
are still replayed after a rebuild.
  --check      change nothing: list the entries that differ, exit 1 if any do
  --db PATH    the database file or postgres:// URL (default: $INVENTORY_DB, else data/inventory.db)
  -h, --help   this text

Exit status: 0 success (with --check: no drift), 1 failure or drift found, 2 usage error.
`;

function describe(d: Difference): string {
  return `  pet ${d.petId}: ${shownEntry(d.before, d.after)} -> ${shownEntry(d.after, d.before)}\n`;
}

await run(USAGE, async (argv) => {
  const { values, positionals } = parse(argv, { check: { type: 'boolean' } });
  if (positionals.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(positionals[0])}`);
  const check = values.check === true;
  // --check changes nothing, so it opens read-only: no write, no write lock.
  const store = await openExistingStore(values, { readonly: check });
  try {
    const started = performance.now();
    const report = await rebuildProjection(store, { check, onProgress: progressBar(process.stderr) }).catch((error: unknown) => {
      // PostgreSQL's insufficient_privilege: the service's role may not create the new
      // table, and its words ("permission denied for schema public") do not say who may.
      if (!check && (error as { code?: unknown } | null)?.code === '42501') {
        throw new Error(
          `${(error as Error).message}: a rebuild creates and swaps tables, so it runs as the role that owns the schema ` +
            "(the one scripts/migrate ran as, inventory_owner in docs/scaling.md), not as the service's role",
          { cause: error },
        );
      }
      throw error;
    });
    const seconds = ((performance.now() - started) / 1000).toFixed(2);
    const written = check ? `${report.entries} entries compared, nothing written` : `${report.entries} entries written`;
    const caughtUp = report.caughtUp ? ` (${report.caughtUp} of them appended during the rebuild)` : '';
    process.stdout.write(
      `${check ? 'checked' : 'rebuilt'} in ${seconds} s: ${report.eventsReplayed} events replayed${caughtUp}, ` +
        `${written}; ` +
        `${report.differences.length} ${check ? 'differ' : 'differed'}${report.differences.length ? ':' : ''}\n`,
    );
    for (const d of report.differences) process.stdout.write(describe(d));
    if (report.adjustments > 0) {
      process.stdout.write(`${report.adjustments} stock_adjustments rows differed from the events and were put right\n`);
    }
    return check && report.differences.length > 0 ? 1 : 0;
  } finally {
    await store.close();
  }
});
