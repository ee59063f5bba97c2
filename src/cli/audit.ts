// scripts/audit: list stock adjustments (the stock_adjustments view) for auditors,
// filtered by pet, actor and time, as a table, CSV or JSON lines. It opens the database
// read-only and streams: rows are written as they are read, and it waits whenever
// standard output is full, so any number of rows fits in a little memory.
import { once } from 'node:events';
import { parsePetId } from '../domain/events.ts';
import { FORMATS, formatterFor, isFormat, type AdjustmentRow } from './audit-format.ts';
import { openStore, parse, run, UsageError, type Parsed } from './common.ts';

const USAGE = `
Usage: scripts/audit [--pet PETID] [--actor NAME] [--since TIME] [--until TIME]
                     [--format table|csv|jsonl] [--db PATH|URL]

Lists stock adjustments (the stock_adjustments view: one row per QuantitySet event,
confirmed counts with delta 0 included), ordered by seq. Opens the database read-only
and never writes to it; it may run while the service does.
  --pet PETID      only this pet (decimal digits, 1 to 9223372036854775807)
  --actor NAME     only this actor, exactly: a key's name, or cli:<user>
  --since TIME     only rows recorded at or after TIME (inclusive)
  --until TIME     only rows recorded before TIME (exclusive)
  --format F       table (default: aligned columns, widths from the first 500 rows),
                   csv (RFC 4180, a header line, LF line ends; a text cell that
                   begins with = + - @, a tab or a CR gets a leading ' so that
                   spreadsheets show it as text, not run it as a formula) or
                   jsonl (one JSON object per line; integers as exact bare numbers)
  --db PATH        the database file or postgres:// URL (default: $INVENTORY_DB, else data/inventory.db)
  -h, --help       this text

TIME is ISO 8601: a date (midnight UTC), or a date and time with Z or an offset
(+02:00, +0200 or +02), seconds and their fraction optional: 2026-11-21,
2026-11-21T10:00Z, 2026-11-21T10:00:00Z, 2026-11-21T12:00:00.5+02:00, 2026-11-21T12:00+0200.

Exit status: 0 success (also when no row matches), 1 failure, 2 usage error.
`;

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

function timeOption(values: Parsed['values'], name: 'since' | 'until'): string | undefined {
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

await run(USAGE, async (argv) => {
  const { values, positionals } = parse(argv, {
    pet: { type: 'string' },
    actor: { type: 'string' },
    since: { type: 'string' },
    until: { type: 'string' },
    format: { type: 'string' },
  });
  if (positionals.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(positionals[0])}`);
  const format = values.format ?? 'table';
  if (!isFormat(format)) throw new UsageError(`--format must be ${FORMATS.join(', ')}, not ${JSON.stringify(format)}`);
  let petId: bigint | undefined;
  if (typeof values.pet === 'string') {
    petId = parsePetId(values.pet);
    if (petId === undefined) throw new UsageError(`--pet: invalid PETID ${JSON.stringify(values.pet)}`);
  }
  const actor = typeof values.actor === 'string' ? values.actor : undefined;
  // An empty value is not "every actor": `--actor "$NAME"` with NAME unset must not list all.
  if (actor === '') throw new UsageError('--actor must not be empty');
  const filter = { pet: petId, actor, since: timeOption(values, 'since'), until: timeOption(values, 'until') };

  const store = await openStore(values, { readonly: true });
  try {
    const pages = store.stockAdjustments(filter) as AsyncIterable<AdjustmentRow[]>;
    const formatter = formatterFor(format);
    const out = makeOutput(process.stdout);
    try {
      await out.write(formatter.begin());
      for await (const rows of pages) for (const row of rows) await out.write(formatter.row(row));
      await out.write(formatter.end());
      await out.flush();
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EPIPE') return 0;
      throw err;
    }
    return 0;
  } finally {
    await store.close();
  }
});
