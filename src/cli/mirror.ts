// scripts/mirror: keeps a copy of a log that anyone can check and any static web server
// can serve (src/application/mirror/ says how each piece is checked), and its events as SQLite.
import { mkdirSync } from 'node:fs';
import { verifiersOf } from '../application/signing/trust.ts';
import { copyDir } from '../application/mirror/copy-dir.ts';
import { logSource } from '../application/mirror/log-source.ts';
import { mirror } from '../application/mirror/mirror.ts';
import { parse, run, UsageError } from './common.ts';
import { progressBar } from './progress.ts';

const USAGE = `
Usage: scripts/mirror --url URL [--trust VKEY]... DIR   (with INVENTORY_KEY when URL is a service)

Copies the log at URL (the service, or a copy of it served by any web server) into DIR,
with the service's paths: DIR/v1/log/checkpoint, DIR/v1/log/signing-keys and the C2SP
tiles DIR/v1/log/tile/..., so that a static server whose root is DIR answers the same
URLs, and DIR/events.db, a SQLite database with the events table and stock_adjustments
as the service has them (no keys), for the auditors' guide's queries.
Trusts keys as scripts/verify-log --checkpoint does, kept in DIR/checkpoint.keys: those
given with --trust, else on the first run the keys the log lists (printed, to compare
out of band), and any key a trusted one endorsed. The newest checkpoint must be signed
by a trusted key and extend the one DIR holds; each tile is checked against the level
above it and the checkpoint's root, each event's hash recomputed from its fields. A
piece that does not match is not written (BROKEN), and DIR keeps the checkpoint it had.
A later run fetches only what is new: a full tile is fetched once, ever.
  --url URL       the service or a copy (http://host:port)
  --trust VKEY    a verifier key to pin (NAME+HASH+KEY, repeatable)
  -h, --help      this text

Exit status: 0 DIR holds the newest checkpoint's log, 1 BROKEN (nothing of the piece
that did not match is kept) or the log could not be read, 2 usage error.
`;

await run(USAGE, async (argv) => {
  const { values, positionals } = parse(argv, { url: { type: 'string' }, trust: { type: 'string', multiple: true } });
  if (values.db !== undefined) throw new UsageError('mirror reads no database: it copies the log at --url');
  const url = typeof values.url === 'string' ? values.url : '';
  if (!/^https?:\/\/[^/]+\/?$/.test(url)) throw new UsageError('--url must be an http:// or https:// address (http://host:port)');
  if (positionals.length !== 1 || positionals[0] === '') throw new UsageError('give one DIR: where the copy is kept');
  const trust = (values.trust ?? []) as unknown as string[];
  try {
    verifiersOf(trust, '--trust');
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const dir = positionals[0]!;
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  const source = logSource(url, process.env.INVENTORY_KEY ?? '');
  const bar = progressBar(process.stderr, 'copying');
  const verdict = await mirror({
    source,
    dir: copyDir(dir),
    trust,
    report: (line) => process.stderr.write(`${line}\n`),
    ...(bar ? { onProgress: bar } : {}),
  });
  if (!verdict.ok) {
    process.stderr.write(`error: BROKEN: ${verdict.reason}\n`);
    return 1;
  }
  process.stderr.write(
    `ok: ${dir} holds the log's ${verdict.size} events (${verdict.size - verdict.kept} new); ` +
      `${verdict.tiles} tiles and bundles, ${source.downloaded()} bytes downloaded\n`,
  );
  return 0;
});
