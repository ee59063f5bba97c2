// scripts/set-status: change a tracked pet's status (event StatusSet).
import { appliedEntry, commandsFor } from '../application/write/commands.ts';
import { isPetStatus, parsePetId } from '../domain/events.ts';
import { openExistingStore, operatorMeta, parse, run, UsageError } from './common.ts';

const USAGE = `
Usage: scripts/set-status PETID STATUS [--db PATH|URL]

Sets a tracked pet's status (event StatusSet). The quantity is not touched: quantity
and status are independent.
  PETID        decimal digits, 1 to 9223372036854775807
  STATUS       available, pending or sold
  --db PATH    the database file or postgres:// URL (default: $INVENTORY_DB, else data/inventory.db)
  -h, --help   this text

Exit status: 0 success, 1 failure (the pet is not tracked), 2 usage error.
`;

await run(USAGE, async (argv) => {
  const { values, positionals } = parse(argv, {});
  if (positionals.length !== 2) throw new UsageError('give PETID and STATUS');
  const petId = parsePetId(positionals[0]!);
  if (petId === undefined) throw new UsageError(`invalid PETID ${JSON.stringify(positionals[0])}`);
  const status = positionals[1]!;
  if (!isPetStatus(status)) throw new UsageError(`STATUS must be available, pending or sold, not ${JSON.stringify(status)}`);
  const store = await openExistingStore(values);
  try {
    const commands = commandsFor(store);
    const result = await commands.handle({ type: 'SetStatus', petId, status }, operatorMeta());
    if (result.kind === 'refused' && result.refusal.reason === 'not_tracked') {
      process.stderr.write(`error: pet ${petId} is not tracked (track it with scripts/track)\n`);
      return 1;
    }
    const entry = appliedEntry(result);
    process.stdout.write(`pet ${entry.petId}: ${entry.status}, quantity ${entry.quantity}\n`);
    return 0;
  } finally {
    await store.close();
  }
});
