// scripts/verify-log: check the event log's hash chain, and optionally that it extends
// a digest saved earlier.
import { formatDigest, parseDigest } from '../store/hash-chain.ts';
import { verifyIdempotency } from '../verify-idempotency.ts';
import { verifyLog } from '../verify-log.ts';
import { openStore, parse, run, UsageError } from './common.ts';

const USAGE = `
Usage: scripts/verify-log [--digest SEQ:HASH] [--db PATH|URL]

Recomputes the hash chain over every event of the log (read-only). When it is intact,
prints the head of the log as a digest SEQ:HASH, alone on standard output: save it
somewhere the database's owner cannot change (a ticket, an e-mail, a notary). Later,
--digest SEQ:HASH proves that the log still extends that digest: rewriting history
before it, even with the whole chain recomputed, or truncating the log, is caught.
The stored answers of Idempotency-Keys (idempotency_keys) expire and are removed, so the
chain does not cover them; each stored 200 must name an event of the log (its version
and quantity), which is checked too.
  --digest SEQ:HASH   a digest printed by an earlier run
  --db PATH           the database file or postgres:// URL (default: $INVENTORY_DB, else data/inventory.db)
  -h, --help          this text

Exit status: 0 the chain is intact (and extends the digest), 1 it is broken or does not
extend the digest (the first bad sequence number is reported), 2 usage error.
`;

await run(USAGE, async (argv) => {
  const { values, positionals } = parse(argv, { digest: { type: 'string' } });
  if (positionals.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(positionals[0])}`);
  const digest = values.digest === undefined ? undefined : parseDigest(String(values.digest));
  if (values.digest !== undefined && !digest) {
    throw new UsageError(`--digest must be SEQ:HASH (a number, a colon, 64 hex digits), not ${JSON.stringify(values.digest)}`);
  }
  const store = await openStore(values, { readonly: true });
  try {
    const verdict = await verifyLog(store, digest);
    if (!verdict.ok) {
      process.stderr.write(`error: BROKEN at seq ${verdict.seq}: ${verdict.reason}\n`);
      return 1;
    }
    const extends_ = digest ? `; it extends ${formatDigest(digest)}` : '';
    process.stderr.write(`ok: ${verdict.events} events, chain intact${extends_}\n`);
    const records = await verifyIdempotency(store);
    if (!records.ok) {
      process.stderr.write(`error: BROKEN idempotency record: ${records.reason}\n`);
      return 1;
    }
    if (records.records > 0) {
      process.stderr.write(`ok: ${records.records} idempotency records (not in the chain), each stored 200 names its event\n`);
    }
    process.stdout.write(`${formatDigest(verdict.head)}\n`);
    return 0;
  } finally {
    await store.close();
  }
});
