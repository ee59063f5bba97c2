// What the auditors' listings (scripts/audit, scripts/stock-at) share: time options as
// recorded_at writes them (support/instant.ts), and standard output written in chunks, waiting when full.
import { once } from 'node:events';
import type { Formatter, Value } from '../support/audit-format.ts';
import { UsageError, type Parsed } from './common.ts';
import { parseInstant } from '../support/instant.ts';

export function timeOption(values: Parsed['values'], name: string): string | undefined {
  const text = values[name];
  if (typeof text !== 'string') return undefined;
  const time = parseInstant(text);
  if (time === undefined) {
    throw new UsageError(
      `--${name}: invalid TIME ${JSON.stringify(text)}: use ISO 8601, such as 2026-11-21, ` +
        '2026-11-21T10:00:00Z or 2026-11-21T12:00:00+02:00 (a time of day needs Z or an offset)',
    );
  }
  return time;
}

/**
 * Standard output in chunks of about 64 KiB (one write per row would be one system call
 * per row), waiting for 'drain' whenever it is full. A reader that goes away (EPIPE,
 * as with `| head`) ends the listing quietly.
 */
function makeOutput(stream: NodeJS.WriteStream) {
  let pending = '';
  let failure: NodeJS.ErrnoException | undefined;
  stream.on('error', (err: NodeJS.ErrnoException) => {
    failure ??= err;
  });
  const flush = async (): Promise<void> => {
    if (failure) throw failure;
    if (pending === '') return;
    const chunk = pending;
    pending = '';
    if (!stream.write(chunk)) await once(stream, 'drain');
  };
  return {
    async write(text: string): Promise<void> {
      pending += text;
      if (pending.length >= 65536) await flush();
    },
    flush,
  };
}

/** Writes pages of rows through a formatter to standard output; a reader that went away
 * (EPIPE, as with `| head`) ends the listing quietly. */
export async function writeListing<C extends string>(
  formatter: Formatter<C>,
  pages: AsyncIterable<Record<C, Value>[]> | Iterable<Record<C, Value>[]>,
): Promise<void> {
  const out = makeOutput(process.stdout);
  try {
    await out.write(formatter.begin());
    for await (const rows of pages) for (const row of rows) await out.write(formatter.row(row));
    await out.write(formatter.end());
    await out.flush();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EPIPE') return;
    throw err;
  }
}
