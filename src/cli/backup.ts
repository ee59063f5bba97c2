// scripts/backup: an online, consistent copy of the SQLite database, verified.
import { dirname, resolve } from 'node:path';
import { existsSync, rmSync } from 'node:fs';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { formatDigest } from '../store/hash-chain.ts';
import { backupStore, isPostgresUrl, openStore } from '../store/open.ts';
import { verifyIdempotency, type RecordsVerdict } from '../application/verify/verify-idempotency.ts';
import { brokenAt, verifyLog, type Verdict } from '../application/verify/verify-log.ts';
import { dbPathArg, parse, run, UsageError } from './common.ts';
import type { AuditReads } from '../store/audit-reads.ts';
import type { EventLog } from '../store/event-log.ts';

const USAGE = `
Usage: scripts/backup [--db PATH] OUT

Copies the SQLite database to the new file OUT while the service runs: one consistent
snapshot (every write acknowledged before the copy began is in it), taken without
stopping or stalling the service's writes. OUT must not exist; it is created readable
by its owner only (0600) and synced to disk. Then the copy is verified as
scripts/verify-log does, and its digest SEQ:HASH printed on standard output: the same
digest verify-log prints for the copy, and for the database at that moment. The copy
holds the stored answers of Idempotency-Keys too (retries after a restore are replayed);
they are outside the chain, and checked as verify-log checks them.
  OUT          the copy, a new file
  --db PATH    the database file (default: $INVENTORY_DB, else data/inventory.db)
  -h, --help   this text

To restore, stop the service, put the copy at the database's path (with no -wal or -shm
file beside it) and start the service. For PostgreSQL, use its own tools instead:
  pg_dump --format=custom --file=inventory.dump "$INVENTORY_DB"
and verify a restored database with scripts/verify-log --db URL.

Exit status: 0 the copy is made and verifies, 1 failure or interrupted (nothing is left at
OUT, and a file that was there already is untouched), 2 usage error.
`;

const SIGNALS: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

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
  // The folder is named, not the file: "cannot open OUT: no such file" blames a file
  // that a backup is meant to create.
  const folder = dirname(resolve(out));
  if (!existsSync(folder))
    throw new Error(`the folder ${dirname(out)} does not exist: create it first (mkdir -p ${dirname(out)}), then run the backup again`);
  const started = Date.now();
  // Until the copy has verified, OUT is ours to remove: a failed or interrupted backup
  // (Ctrl-C, a cron job's timeout) leaves nothing at OUT that could pass for a backup.
  // A signal's handler runs only when the event loop gets a turn: never inside
  // backupStore, which is synchronous (so OUT is either not ours yet, and maybe someone
  // else's file, or the whole copy), then between pages of the verification, and once
  // more before the copy is declared good.
  let ours = false;
  const interrupted = (signal: NodeJS.Signals) => {
    if (ours) rmSync(out, { force: true });
    process.stderr.write(`error: interrupted by ${signal}${ours ? `; the copy at ${out}, not yet verified, was removed` : ''}\n`);
    process.exit(1);
  };
  for (const signal of SIGNALS) process.on(signal, interrupted);
  try {
    backupStore(source, out);
    ours = true;
    await signalsHandled();
    const copy = await openStore(out, { readonly: true, mustExist: true });
    let verdict: Verdict;
    let records: RecordsVerdict;
    try {
      verdict = await verifyLog(withTurns(copy));
      records = await verifyIdempotency(copy);
    } finally {
      await copy.close();
    }
    if (!verdict.ok) {
      process.stderr.write(
        `error: the copy does not verify, so it was removed: BROKEN at ${brokenAt(verdict)}: ${verdict.reason}\n` +
          `  the database itself is checked with scripts/verify-log --db ${source}\n`,
      );
      return 1;
    }
    if (!records.ok) {
      process.stderr.write(`error: the copy does not verify, so it was removed: BROKEN idempotency record: ${records.reason}\n`);
      return 1;
    }
    await signalsHandled();
    ours = false;
    process.stderr.write(`ok: ${out}: ${verdict.events} events, chain intact, in ${Date.now() - started} ms\n`);
    if (records.records > 0)
      process.stderr.write(`ok: ${records.records} idempotency records (not in the chain), each stored 200 names its event\n`);
    process.stdout.write(`${formatDigest(verdict.head)}\n`);
    return 0;
  } finally {
    if (ours) rmSync(out, { force: true });
    for (const signal of SIGNALS) process.off(signal, interrupted);
  }
});

/**
 * Lets a signal that has arrived be handled now. A signal is read in the event loop's
 * poll phase, and setImmediate runs after that phase: two turns, because the first may
 * run in the same iteration as a poll that had already looked before the signal came.
 */
async function signalsHandled(): Promise<void> {
  await nextTurn();
  await nextTurn();
}

/** The copy's log with a turn of the event loop after each page, so that a long verification can be interrupted. */
type VerifiedStore = Pick<EventLog, 'chainRows'> &
  Pick<AuditReads, 'keyHistory' | 'treeNodes' | 'treeNodeCount' | 'logHead' | 'signingKeys'>;

function withTurns(store: VerifiedStore): VerifiedStore {
  return {
    keyHistory: () => store.keyHistory(),
    logHead: () => store.logHead(),
    signingKeys: () => store.signingKeys(),
    treeNodes: (keys) => store.treeNodes(keys),
    treeNodeCount: () => store.treeNodeCount(),
    async *chainRows() {
      for await (const page of store.chainRows()) {
        yield page;
        await nextTurn();
      }
    },
  };
}
