// scripts/verify-log --url URL --checkpoint FILE: the monitor's files and its report.
// FILE holds the newest checkpoint verified, exactly as served (a signed note any tool
// reads); FILE.keys the pinned verifier keys, one a line. Both are replaced whole, and
// only after a run that passed.
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { serviceGetter } from '../application/verify/checkpoint-checks.ts';
import { KeptFileError, monitor, type WholeLogVerdict } from '../application/verify/monitor.ts';
import { verifiersOf } from '../application/signing/trust.ts';
import { apiGetter, verifyThroughApi } from '../application/verify/verify-signed.ts';
import { UsageError, type Parsed } from './common.ts';
import { AnsweredStatus, logSource } from '../application/mirror/log-source.ts';
import { wholeLogFromTiles } from '../application/mirror/whole-log.ts';

export const MONITOR_OPTIONS = {
  checkpoint: { type: 'string' },
  trust: { type: 'string', multiple: true },
} as const;

export const MONITOR_USAGE = `
       scripts/verify-log --url URL --checkpoint FILE [--trust VKEY]...   (with INVENTORY_KEY)

  --checkpoint FILE   a monitor: checks that the service's newest checkpoint is signed by
                      a trusted key and extends the one kept in FILE (a consistency proof,
                      a few kilobytes whatever the log's size), then keeps the new one in
                      FILE. The first run (no FILE) checks the whole log once (as --url)
                      and creates FILE. The pinned keys are in FILE.keys, one verifier key
                      a line: on the first run those given with --trust, else the log's
                      first key, printed to be compared out of band. A key the log lists
                      with an endorsement signed by a trusted key (for this log, naming
                      that key, within the endorser's time) is trusted too, and kept in
                      FILE.keys; every other key the log lists (added --unendorsed, or
                      whose endorsement does not verify) is reported UNTRUSTED, never
                      pinned. A checkpoint dated more than 5 s outside its key's time
                      (added, retired) is BROKEN
  --trust VKEY        a verifier key to pin (NAME+HASH+KEY, repeatable); on a later run it
                      adds to FILE.keys
`;

/** A file's text, or undefined when there is none. */
function readIfThere(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new Error(`cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? 'unreadable'})`, { cause: error });
  }
}

function replaceWhole(file: string, text: string): void {
  const temp = `${file}.${process.pid}.tmp`;
  writeFileSync(temp, text);
  renameSync(temp, file);
}

/** Runs the monitor for verify-log's parsed arguments; the exit status. */
export async function monitorCommand(values: Parsed['values'], digests: number): Promise<number> {
  const file = values.checkpoint as string;
  const url = values.url;
  if (typeof url !== 'string') throw new UsageError('--checkpoint needs --url: the monitor reads a running service');
  if (values.db !== undefined || digests > 0) throw new UsageError('--checkpoint takes neither --db nor digests: FILE is what it keeps');
  if (file === '') throw new UsageError('--checkpoint must name a file');
  if (!/^https?:\/\/[^/]+\/?$/.test(url))
    throw new UsageError(`--url must be the service's http:// or https:// address, not ${JSON.stringify(url)}`);
  const trust = (values.trust ?? []) as unknown as string[];
  try {
    verifiersOf(trust, '--trust');
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const key = process.env.INVENTORY_KEY ?? '';
  if (key === '') throw new UsageError('--checkpoint needs an API key in INVENTORY_KEY (a read-only key is enough)');
  const keysText = readIfThere(`${file}.keys`);
  const service = serviceGetter(url, key);
  // The first run reads the whole log: its bytes count too.
  const api = apiGetter(url, key);
  let wholeLogBytes = 0;
  const wholeLog = async (): Promise<WholeLogVerdict> => {
    const v = await verifyThroughApi(async (path) => {
      const text = await api(path);
      wholeLogBytes += Buffer.byteLength(text);
      return text;
    }, []).catch((error: unknown) => {
      // A copy served by a static server has the tiles, not the feed and the signed head.
      if (error instanceof AnsweredStatus && error.status === 404) return undefined;
      throw error;
    });
    if (v === undefined) return wholeLogFromTiles(logSource(url, key));
    return v.ok ? { ok: true, events: v.events, head: v.head } : v;
  };
  let verdict;
  try {
    verdict = await monitor({
      get: service.get,
      kept: readIfThere(file),
      keptKeys: keysText?.split('\n').filter((line) => line.trim() !== ''),
      trust,
      wholeLog,
    });
  } catch (error) {
    if (error instanceof KeptFileError) throw new Error(`${file}: ${error.message}`, { cause: error });
    throw error;
  }
  for (const line of verdict.report) process.stderr.write(`${line}\n`);
  if (!verdict.ok) {
    process.stderr.write(`error: BROKEN: ${verdict.reason}\n`);
    return 1;
  }
  replaceWhole(`${file}.keys`, verdict.keys.map((k) => `${k}\n`).join(''));
  replaceWhole(file, verdict.checkpoint.note);
  process.stderr.write(
    wholeLogBytes === 0
      ? `ok: kept in ${file}; ${service.bytes()} bytes of checkpoints and proofs downloaded\n`
      : `ok: kept in ${file}; ${wholeLogBytes + service.bytes()} bytes downloaded (the whole log, once, then checkpoints and proofs)\n`,
  );
  return 0;
}
