// scripts/stock-at: the stock and status of every pet as of a past moment, replayed from
// the event log with the projection's own rule (application/read/stock-replay.ts), read-only.
import { parsePetId } from '../domain/events.ts';
import { FORMATS, formatterFor, isFormat } from '../support/audit-format.ts';
import { replayAll, replayPet, type Replayed } from '../application/read/stock-replay.ts';
import { openExistingStore, parse, run, UsageError } from './common.ts';
import { timeOption, writeListing } from './listing.ts';

const USAGE = `
Usage: scripts/stock-at --at TIME [--pet PETID] [--format table|csv|jsonl] [--db PATH|URL]

The stock of every pet as of TIME: the events recorded at or before TIME (inclusive),
replayed in seq order with the rule the service itself applies. One row per pet tracked
by then, by pet id: its quantity, status, version (the ETag a client saw then) and when
its last event before TIME was recorded. A TIME after the last event gives the stock as
it is now. Opens the database read-only; it may run while the service does.

If the clock was ever set back, events recorded at or before TIME can follow one recorded
after it. The replay stops at the first event after TIME, so that every row is a state the
projection really had; the later ones are left out and counted in a warning.

With --pet, only that pet's events are read (by index), and where the replay stops is
found in the index of times: its cost is that of the pet's events and of the events
recorded after TIME, never a replay of the whole log.

  --at TIME        the moment (ISO 8601, as for scripts/audit: 2026-11-21,
                   2026-11-21T10:00:00Z, 2026-11-21T12:00:00.5+02:00)
  --pet PETID      only this pet
  --format F       table (default), csv or jsonl, as for scripts/audit
  --db PATH        the database file or postgres:// URL (default: $INVENTORY_DB, else data/inventory.db)
  -h, --help       this text

Exit status: 0 success (also when no pet was tracked yet), 1 failure, 2 usage error.
`;

const COLUMNS = ['pet_id', 'quantity', 'status', 'version', 'changed_at'] as const;
const NUMERIC = new Set<(typeof COLUMNS)[number]>(['pet_id', 'quantity', 'version']);

await run(USAGE, async (argv) => {
  const { values, positionals } = parse(argv, { at: { type: 'string' }, pet: { type: 'string' }, format: { type: 'string' } });
  if (positionals.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(positionals[0])}`);
  // recorded_at has milliseconds, and TIME is an inclusive bound: a finer fraction is cut
  // to the millisecond (12:00:00.4005 includes an event at .400, not one at .401).
  const at = timeOption({ at: typeof values.at === 'string' ? values.at.replace(/(\.\d{3})\d+/, '$1') : values.at }, 'at');
  if (at === undefined) throw new UsageError('--at TIME is required');
  const format = values.format ?? 'table';
  if (!isFormat(format)) throw new UsageError(`--format must be ${FORMATS.join(', ')}, not ${JSON.stringify(format)}`);
  let only: bigint | undefined;
  if (typeof values.pet === 'string') {
    only = parsePetId(values.pet);
    if (only === undefined) throw new UsageError(`--pet: invalid PETID ${JSON.stringify(values.pet)}`);
  }

  const store = await openExistingStore(values, { readonly: true, auditing: true });
  let replayed: Replayed;
  try {
    replayed = only === undefined ? await replayAll(store, at) : await replayPet(store, only, at);
  } finally {
    await store.close();
  }
  const { stock, leftOut } = replayed;
  if (leftOut > 0) {
    const events = leftOut === 1 ? '1 event' : `${leftOut} events`;
    process.stderr.write(
      `warning: ${events} recorded at or before ${at} came after one recorded later (the clock was set back): left out\n`,
    );
  }
  const pets = [...stock.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const rows = pets.map((petId) => {
    const { quantity, status, version, updatedAt } = stock.get(petId)!;
    return { pet_id: petId, quantity, status, version, changed_at: updatedAt };
  });
  await writeListing(formatterFor(format, COLUMNS, NUMERIC), [rows]);
  return 0;
});
