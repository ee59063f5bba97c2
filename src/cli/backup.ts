// scripts/backup: an online, consistent copy of the SQLite database, verified.
import { formatDigest } from '../store/hash-chain.ts';
import { isPostgresUrl, openStore } from '../store/open.ts';
import { backupSqlite } from '../store/sqlite/backup.ts';
import { verifyLog } from '../verify-log.ts';
import { dbPathArg, parse, run, UsageError } from './common.ts';

const USAGE = `
Usage: scripts/backup [--db PATH] OUT

Copies the SQLite database to the new file OUT while the service runs: one consistent
snapshot (every write acknowledged before the copy began is in it), taken without
stopping or stalling the service's writes. OUT must not exist; it is created readable
by its owner only (0600) and synced to disk. Then the copy is verified as
scripts/verify-log does, and its digest SEQ:HASH printed on standard output: the same
digest verify-log prints for the copy, and for the database at that moment.
  OUT          the copy, a new file
  --db PATH    the database file (default: $INVENTORY_DB, else data/inventory.db)
  -h, --help   this text

To restore, stop the service, put the copy at the database's path (with no -wal or -shm
file beside it) and start the service. For PostgreSQL, use its own tools instead:
  pg_dump --format=custom --file=inventory.dump "$INVENTORY_DB"
and verify a restored database with scripts/verify-log --db URL.

Exit status: 0 the copy is made and verifies, 1 failure (nothing is left at OUT), 2 usage error.
`;

await run(USAGE, async (argv) => {
  const { values, positionals } = parse(argv, {});
  if (positionals.length !== 1)
    throw new UsageError(positionals.length === 0 ? 'OUT is missing' : `unexpected argument ${JSON.stringify(positionals[1])}`);
  const out = positionals[0]!;
  if (out.trim() === '') throw new UsageError('OUT must not be empty');
  const source = dbPathArg(values);
  if (isPostgresUrl(source)) {
    throw new Error('scripts/backup copies SQLite databases; for PostgreSQL use pg_dump --format=custom (see scripts/backup --help)');
  }
  const started = Date.now();
  backupSqlite(source, out);
  const copy = await openStore(out, { readonly: true, mustExist: true });
  try {
    const verdict = await verifyLog(copy);
    if (!verdict.ok) {
      process.stderr.write(`error: the copy at ${out} does not verify: BROKEN at seq ${verdict.seq}: ${verdict.reason}\n`);
      return 1;
    }
    process.stderr.write(`ok: ${out}: ${verdict.events} events, chain intact, in ${Date.now() - started} ms\n`);
    process.stdout.write(`${formatDigest(verdict.head)}\n`);
    return 0;
  } finally {
    await copy.close();
  }
});
