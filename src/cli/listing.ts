// What the auditors' listings (scripts/audit, scripts/stock-at) share: times as
// recorded_at writes them, and standard output written in chunks, waiting when full.
import { once } from 'node:events';
import type { Formatter, Value } from '../support/audit-format.ts';
import { UsageError, type Parsed } from './common.ts';

// A date, or a date and time (minutes, seconds and a fraction optional) with Z or an
// offset in any ISO 8601 form: +02:00, +0200 or +02.
const TIME = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(?:Z|([+-])(\d{2})(?::?(\d{2}))?))?$/;
const RECORDED_AT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/**
 * An ISO 8601 time as recorded_at writes it (UTC, milliseconds), so that the two compare
 * as strings; undefined if it is not a real time. A time without a zone is refused
 * rather than guessed.
 */
function parseTime(text: string): string | undefined {
  const m = TIME.exec(text);
  if (!m) return undefined;
  const [, year, month, day, hour = '0', minute = '0', second = '0', fraction = '', sign = '+', offsetHour = '0', offsetMinute = '0'] = m;
  // Date turns 2026-02-30 into 2 March and 24:00 into the next day: check the fields first.
  const date = `${year}-${month}-${day}`;
  if (new Date(`${date}T00:00:00Z`).toISOString().slice(0, 10) !== date) return undefined;
  if (+hour > 23 || +minute > 59 || +second > 59 || +offsetHour > 23 || +offsetMinute > 59) return undefined;
  // recorded_at has milliseconds: rounding a finer bound up keeps both --since (at or
  // after) and --until (before) exact, since no row lies between the two.
  const millis = Math.ceil(Number(`0.${fraction || '0'}`) * 1000 - 1e-9);
  const offset = (sign === '-' ? -1 : 1) * (+offsetHour * 60 + +offsetMinute) * 60_000;
  // setUTCFullYear, not Date.UTC, which reads the years 0 to 99 as 1900 to 1999.
  const local = new Date(0);
  local.setUTCFullYear(+year!, +month! - 1, +day!);
  local.setUTCHours(+hour, +minute, +second, millis);
  const time = new Date(local.getTime() - offset);
  if (Number.isNaN(time.getTime())) return undefined;
  // An offset can push year 9999 to +010000, which no longer compares as a string.
  const iso = time.toISOString();
  return RECORDED_AT.test(iso) ? iso : undefined;
}

export function timeOption(values: Parsed['values'], name: string): string | undefined {
  const text = values[name];
  if (typeof text !== 'string') return undefined;
  const time = parseTime(text);
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
