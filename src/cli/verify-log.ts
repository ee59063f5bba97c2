// scripts/verify-log: check the event log's and the key log's hash chains, and optionally
// that they extend digests saved earlier.
import { readFileSync } from 'node:fs';
import { formatDigest, parseDigest, type Digest } from '../store/hash-chain.ts';
import { verifyIdempotency } from '../application/verify/verify-idempotency.ts';
import { brokenAt, verifyLog, verifyServedState } from '../application/verify/verify-log.ts';
import {
  apiGetter,
  digestsOfHead,
  headSignatureProblem,
  parseSignedHead,
  verifyThroughApi,
  type SignedHead,
} from '../application/verify/verify-signed.ts';
import { openExistingStore, parse, run, UsageError } from './common.ts';
import { systemWords } from '../support/messages.ts';

/** Why fetch could not reach the service (its "fetch failed" says nothing), in words. */
function unreachable(url: string, error: unknown): Error {
  const cause = (error as { cause?: { code?: unknown } }).cause;
  const code = typeof cause?.code === 'string' ? cause.code : (error as { name?: string }).name;
  const why: Record<string, string> = {
    ECONNREFUSED: 'connection refused: is it running, and on that host and port?',
    ECONNRESET: 'the connection was closed',
    ENOTFOUND: 'the host name is not known',
    EHOSTUNREACH: 'the host cannot be reached',
    TimeoutError: 'no answer in time: is it running, and reachable from here?',
  };
  return new Error(`the service at ${url} did not answer (${why[code ?? ''] ?? code ?? 'no answer'})`, { cause: error });
}
import { MONITOR_OPTIONS, MONITOR_USAGE, monitorCommand } from './monitor.ts';

/** --url: the service's log through its API, against the kept heads and digests. */
async function verifyService(url: string, db: unknown, kept: (SignedHead | Digest)[]): Promise<number> {
  if (db !== undefined) throw new UsageError('--url and --db exclude each other: --url reads no database');
  if (!/^https?:\/\/[^/]+\/?$/.test(url))
    throw new UsageError(`--url must be the service's http:// or https:// address, not ${JSON.stringify(url)}`);
  const key = process.env.INVENTORY_KEY ?? '';
  if (key === '') throw new UsageError('--url needs an API key in INVENTORY_KEY (a read-only key is enough)');
  const verdict = await verifyThroughApi(apiGetter(url, key), kept).catch((error: unknown) => {
    // fetch rejects with a TypeError when no answer came; an answer that is not 200 is ours.
    const noAnswer = (error instanceof TypeError && error.message === 'fetch failed') || (error as Error).name === 'TimeoutError';
    throw noAnswer ? unreachable(url, error) : error;
  });
  if (!verdict.ok) {
    process.stderr.write(`error: BROKEN${verdict.seq === undefined ? '' : ` at seq ${verdict.seq}`}: ${verdict.reason}\n`);
    return 1;
  }
  const extends_ = kept.length > 0 ? `; it extends ${kept.length} kept head${kept.length === 1 ? '' : 's'} and digests` : '';
  process.stderr.write(
    `ok: ${verdict.events} events through the API, chain intact, signed head at seq ${verdict.head.seq} valid${extends_}\n` +
      `ok: ${verdict.keys} signing key${verdict.keys === 1 ? '' : 's'}; key log head keys:${verdict.head.keys.seq}:${verdict.head.keys.hash}\n`,
  );
  process.stdout.write(`${JSON.stringify(verdict.head)}\n`);
  return 0;
}

const USAGE = `
Usage: scripts/verify-log [--digest SEQ:HASH]... [--digests FILE] [--db PATH|URL]
       scripts/verify-log --url URL [--digest SEQ:HASH]... [--digests FILE]   (with INVENTORY_KEY)${MONITOR_USAGE.trimEnd()}

Recomputes the hash chain over every event of the log, and the key log's own chain
against the api_keys table (read-only). A gap in seq, or a sequence counter above the
newest event, is a removal and is reported too, and so is what the chain cannot show:
an entry whose versions are not 1, 2, 3, …; an event whose actor (an API key's name;
cli:… aside) was no key, or a revoked one, at its time, or one that does not write its
type (operators write PetTracked and StatusSet; a key QuantitySet; a read-only key
nothing); a chain head (PostgreSQL) not
at the newest event; a projection (inventory) that differs from the replay of the log;
a missing or disabled append-only trigger. Time going backwards in recorded_at is a
warning. When all is intact, prints the head of
the log as a digest SEQ:HASH, alone on standard output: save it somewhere the
database's owner cannot change (a ticket, an e-mail, a notary). GET /v1/log/head
answers it too, with the key log's head as keys:SEQ:HASH. Later, --digest proves that
the logs still extend those digests: rewriting history before one, even with the whole
chain recomputed, or truncating the log, is caught.
The stored answers of Idempotency-Keys (idempotency_keys) expire and are removed, so the
chain does not cover them; each stored 200 must name an event of the log (its version
and quantity), which is checked too.
  --digest DIGEST     a digest printed by an earlier run, SEQ:HASH or keys:SEQ:HASH (repeatable)
  --digests FILE      every digest in FILE: its lines hold digests and times, separated
                      by blanks, or whole GET /v1/log/head answers (one JSON object a
                      line), whose signatures are checked with the key log's signing
                      keys before their digests are
  --db PATH           the database file or postgres:// URL (default: $INVENTORY_DB, else data/inventory.db)
  --url URL           no database: the running service at URL (http://host:port), through
                      its API alone, with the key in INVENTORY_KEY (a read-only key is
                      enough): every event of GET /v1/events recomputed, the signing keys,
                      and the signed head, which is printed (one JSON line) to be kept
  -h, --help          this text

Exit status: 0 the chains are intact (and extend the digests), 1 one is broken or does
not extend a digest (the first bad sequence number is reported), or the database, the
service or a --digests file cannot be read, 2 usage error.
`;

function digestOf(text: string, from: string): Digest {
  const digest = parseDigest(text);
  if (!digest) {
    throw new UsageError(`${from} must be SEQ:HASH or keys:SEQ:HASH (a number, a colon, 64 hex digits), not ${JSON.stringify(text)}`);
  }
  return digest;
}

function digestsIn(file: string): { digests: Digest[]; heads: SignedHead[] } {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    // A file that is not there is no usage error: the command was right, the file is not.
    throw new Error(`cannot read ${file}: ${systemWords(error) ?? (error as Error).message}`, { cause: error });
  }
  const heads: SignedHead[] = [];
  const words: string[] = [];
  text.split('\n').forEach((line, i) => {
    if (!line.trimStart().startsWith('{')) return words.push(...line.split(/\s+/));
    const head = parseSignedHead(line);
    if (typeof head === 'string') throw new UsageError(`--digests: line ${i + 1} of ${file} ${head}`);
    heads.push(head);
  });
  // A kept line is TIME DIGEST KEYS-DIGEST; the times are for people.
  const digests = words
    .filter((word) => word !== '' && !/^\d{4}-\d\d-\d\dT[\d:.]+Z$/.test(word))
    .map((word) => digestOf(word, `each digest of ${file}`));
  return { digests, heads };
}

await run(USAGE, async (argv) => {
  const { values, positionals } = parse(argv, {
    digest: { type: 'string', multiple: true },
    digests: { type: 'string' },
    url: { type: 'string' },
    ...MONITOR_OPTIONS,
  });
  if (positionals.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(positionals[0])}`);
  const digests = ((values.digest ?? []) as string[]).map((text) => digestOf(text, '--digest'));
  const heads: SignedHead[] = [];
  if (typeof values.digests === 'string') {
    const kept = digestsIn(values.digests);
    digests.push(...kept.digests);
    heads.push(...kept.heads);
  }
  if (typeof values.checkpoint === 'string') return monitorCommand(values, digests.length + heads.length);
  if (values.trust !== undefined) throw new UsageError('--trust pins keys for --checkpoint');
  if (typeof values.url === 'string') return verifyService(values.url, values.db, [...heads, ...digests]);
  const store = await openExistingStore(values, { readonly: true, auditing: true });
  try {
    if (heads.length > 0) {
      const [{ logId }, keys] = [await store.logHead(), await store.signingKeys()];
      for (const head of heads) {
        const wrong = headSignatureProblem(head, logId, keys);
        if (wrong) {
          process.stderr.write(`error: BROKEN: the kept head of ${head.time} (seq ${head.seq}): ${wrong}\n`);
          return 1;
        }
        digests.push(...digestsOfHead(head));
      }
    }
    const verdict = await verifyLog(store, digests);
    if (!verdict.ok) {
      process.stderr.write(`error: BROKEN at ${brokenAt(verdict)}: ${verdict.reason}\n`);
      return 1;
    }
    const extends_ =
      digests.length === 1
        ? `; it extends ${formatDigest(digests[0]!)}`
        : digests.length > 1
          ? `; it extends ${digests.length} digests`
          : '';
    const served = await verifyServedState(store);
    if (served !== undefined) {
      process.stderr.write(`error: BROKEN: ${served}\n`);
      return 1;
    }
    for (const warning of verdict.warnings ?? []) process.stderr.write(`warning: ${warning}\n`);
    process.stderr.write(
      `ok: ${verdict.events} events, chain intact${extends_}\n` +
        `ok: ${verdict.keyEvents} key events, key chain intact, api_keys agrees\n` +
        `ok: the projection and stock_adjustments are the replay of the log; every append-only trigger is in place\n`,
    );
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
