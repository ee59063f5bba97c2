// scripts/track: start tracking pets (event PetTracked), one or a whole file at once.
import { readFileSync } from 'node:fs';
import { commandsFor } from '../application/write/commands.ts';
import { openExistingStore, operatorMeta, parse, run, UsageError } from './common.ts';
import { petRow, readPetFile, type PetRow } from './pet-file.ts';

const USAGE = `
Usage: scripts/track PETID [--status STATUS] [--quantity N] [--db PATH|URL]
       scripts/track --file FILE [--db PATH|URL]

Starts tracking pets: each gets an inventory entry (event PetTracked).
  PETID           decimal digits, 1 to 9223372036854775807
  --status S      available (default), pending or sold
  --quantity N    initial stock, 0 (default) to 2147483647
  --file FILE     many pets at once: a JSON array of {"petId", "status", "quantity"}
                  (ids as numbers, exact above 2^53 too, or strings of digits; each
                  member at most once; numbers judged as written, so 5.0 is 5 and
                  2147483647.0000001 a fraction), or a CSV with the header
                  petId,status,quantity (empty cells take the defaults). All rows are
                  tracked, or none: one bad row or already tracked pet refuses the file.
  --db PATH       the database file or postgres:// URL (default: $INVENTORY_DB, else data/inventory.db)
  -h, --help      this text

Tracking a pet that is tracked already is refused.
Exit status: 0 success, 1 failure (nothing tracked), 2 usage error.
`;

function rowsFrom(argv: string[]): { rows: PetRow[]; values: Record<string, unknown> } {
  const { values, positionals } = parse(argv, {
    status: { type: 'string' },
    quantity: { type: 'string' },
    file: { type: 'string' },
  });
  if (typeof values.file === 'string') {
    if (positionals.length > 0 || values.status !== undefined || values.quantity !== undefined) {
      throw new UsageError('--file takes no PETID, --status or --quantity');
    }
    return { rows: readPetFile(values.file, readFileSync), values };
  }
  if (positionals.length !== 1) throw new UsageError('give one PETID, or --file FILE');
  // An empty value is not the default: `--quantity "$N"` with N unset must not track 0.
  if (values.status === '' || values.quantity === '') throw new UsageError('--status and --quantity must not be empty');
  const row = petRow(positionals[0]!, String(values.status ?? ''), String(values.quantity ?? ''));
  if (typeof row === 'string') throw new UsageError(row);
  return { rows: [row], values };
}

await run(USAGE, async (argv) => {
  // A bad file is a failure (exit 1), not a usage error: run() reports its problems.
  const { rows, values } = rowsFrom(argv);
  const store = await openExistingStore(values as Parameters<typeof openExistingStore>[0]);
  try {
    const commands = commandsFor(store);
    const tracked = await commands.handleAll(
      rows.map((r) => ({ type: 'TrackPet', ...r })),
      operatorMeta(),
    );
    if (tracked.kind === 'refused') {
      const { refusal } = tracked;
      if (refusal.reason !== 'already_tracked') throw new Error(`tracking was refused: ${refusal.reason}`);
      process.stderr.write(`error: pet ${refusal.petId} is tracked already; nothing was tracked\n`);
      return 1;
    }
    for (const e of tracked.entries) process.stdout.write(`tracked pet ${e.petId}: quantity ${e.quantity}, ${e.status}\n`);
    return 0;
  } finally {
    await store.close();
  }
});
