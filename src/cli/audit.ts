// scripts/audit: list stock adjustments (the stock_adjustments view) for auditors,
// filtered by pet, actor and time, as a table, CSV or JSON lines. It opens the database
// read-only and streams: rows are written as they are read, and it waits whenever
// standard output is full, so any number of rows fits in a little memory.
import { parsePetId } from '../domain/events.ts';
import { COLUMNS, FORMATS, formatterFor, isFormat, NUMERIC, type AdjustmentRow } from '../support/audit-format.ts';
import { openExistingStore, parse, run, UsageError } from './common.ts';
import { timeOption, writeListing } from './listing.ts';

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

  const store = await openExistingStore(values, { readonly: true, auditing: true });
  try {
    const pages = store.stockAdjustments(filter) as AsyncIterable<AdjustmentRow[]>;
    await writeListing(formatterFor(format, COLUMNS, NUMERIC), pages);
    return 0;
  } finally {
    await store.close();
  }
});
