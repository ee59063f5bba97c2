// scripts/verify-receipt: checks a kept Log-Receipt against a running service, through
// its API alone: the checkpoint's signature, the event's inclusion, and the consistency of
// the receipt's tree with the newest one.
import { readFileSync } from 'node:fs';
import { listedKeys, serviceGetter } from '../application/verify/checkpoint-checks.ts';
import { trustedKeys, verifiersOf } from '../application/signing/trust.ts';
import { verifyReceipt } from '../application/verify/verify-receipt.ts';
import { parseLogReceipt } from '../support/log-receipt.ts';
import { parse, run, UsageError } from './common.ts';

const USAGE = `
Usage: scripts/verify-receipt --url URL [--trust VKEY]... [--keys FILE] [RECEIPT]   (with INVENTORY_KEY)

Checks a kept Log-Receipt (the header's value, or the whole "Log-Receipt: ..." line;
read from standard input when RECEIPT is not given) against the running service at URL,
with the key in INVENTORY_KEY (a read-only key is enough). A version 2 receipt: its
checkpoint is signed by a pinned key, the event is in that checkpoint's tree (its
inclusion proof), and the service's newest checkpoint, signed by a pinned key too,
extends that tree (a consistency proof). A version 1 receipt: its signature by a pinned
key, and the event's inclusion in the newest checkpoint's tree. A checkpoint dated
outside its key's time in the key log (before it was added, after it was retired) is
BROKEN. A few kilobytes whatever the log's size.
  --url URL       the service (http://host:port)
  --trust VKEY    a pinned verifier key (NAME+HASH+KEY, repeatable)
  --keys FILE     pinned verifier keys, one a line (a monitor's FILE.keys)
                  A key the log added later is trusted as well when a trusted key
                  endorsed it (GET /v1/log/signing-keys), and the output says so.
                  Without --trust or --keys, the keys the service lists now are used,
                  and the output says so: they prove only what the service says of itself
  -h, --help      this text

Exit status: 0 the receipt holds, 1 it does not (BROKEN: the log no longer extends it,
or a signature or proof fails) or the service could not be asked, 2 usage error.
`;

function keysIn(file: string): string[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new UsageError(`--keys: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? 'unreadable'})`);
  }
  return text.split('\n').filter((line) => line.trim() !== '');
}

function readStdin(): string {
  try {
    return readFileSync(0, 'utf8');
  } catch {
    throw new UsageError('give the receipt as an argument or on standard input');
  }
}

await run(USAGE, async (argv) => {
  const { values, positionals } = parse(argv, {
    url: { type: 'string' },
    trust: { type: 'string', multiple: true },
    keys: { type: 'string' },
  });
  if (values.db !== undefined) throw new UsageError('verify-receipt reads no database: it asks the service at --url');
  if (positionals.length > 1) throw new UsageError(`unexpected argument ${JSON.stringify(positionals[1])}`);
  const url = values.url;
  if (typeof url !== 'string') throw new UsageError('--url is required: the receipt is checked against a running service');
  if (!/^https?:\/\/[^/]+\/?$/.test(url))
    throw new UsageError(`--url must be the service's http:// or https:// address, not ${JSON.stringify(url)}`);
  const key = process.env.INVENTORY_KEY ?? '';
  if (key === '') throw new UsageError('verify-receipt needs an API key in INVENTORY_KEY (a read-only key is enough)');
  const receipt = parseLogReceipt(positionals[0] ?? readStdin());
  if (receipt instanceof Error) throw new UsageError(receipt.message);
  const given = [...((values.trust ?? []) as unknown as string[]), ...(typeof values.keys === 'string' ? keysIn(values.keys) : [])];
  let pinned;
  try {
    pinned = verifiersOf(given, given.length > 0 ? 'a pinned key' : 'a listed key');
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const service = serviceGetter(url, key);
  const listed = await listedKeys(service.get);
  if (given.length === 0) {
    process.stderr.write(`keys: the ${listed.length} the service lists, not pinned ones (pin them with --trust or --keys)\n`);
    pinned = verifiersOf(
      listed.map((k) => k.verifierKey),
      'a key the service lists',
    );
  } else {
    // The pinned keys, and the keys of later rotations that they endorsed, transitively.
    const { trusted, endorsed } = trustedKeys(pinned, listed, receipt.log);
    for (const { key: added, by } of endorsed) process.stderr.write(`trusting key ${added.keyId}: endorsed by ${by.text}\n`);
    pinned = trusted;
  }
  const verdict = await verifyReceipt(service.get, receipt, { trusted: pinned, listed });
  if (!verdict.ok) {
    process.stderr.write(`error: BROKEN: the receipt of seq ${receipt.seq}: ${verdict.reason}\n`);
    return 1;
  }
  for (const line of verdict.report) process.stderr.write(`${line}\n`);
  return 0;
});
