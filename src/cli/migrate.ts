// scripts/migrate: create a database, or bring its schema up to date, and say what it
// applied. With the service's start, the one way a schema changes.
import { existsSync } from 'node:fs';
import { loadMigrations } from '../store/migrate.ts';
import { openSqliteStore } from '../store/sqlite/store.ts';
import { dbPathArg, parse, run, UsageError } from './common.ts';

const USAGE = `
Usage: scripts/migrate [--db PATH]

Creates the database if there is none (the file readable by its owner only, 0600, and
any directory it makes 0700), or applies the migrations it lacks, all in one
transaction, and lists what it applied. Safe while the service runs. A schema newer
than this version knows is refused and left as it is.
  --db PATH    the database file (default: $INVENTORY_DB, else data/inventory.db)
  -h, --help   this text

Exit status: 0 success (also when there was nothing to do), 1 failure, 2 usage error.
`;

await run(USAGE, async (argv) => {
  const { values, positionals } = parse(argv, {});
  if (positionals.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(positionals[0])}`);
  const path = dbPathArg(values);
  const existed = existsSync(path);
  let applied: string[] = [];
  // Opened as the service opens it (not mustExist): creating and upgrading is the point.
  const store = await openSqliteStore(path, { onMigrated: (names) => (applied = names) });
  await store.close();
  const version = loadMigrations().at(-1)?.version ?? 0;
  if (!existed) process.stdout.write(`created ${path}\n`);
  for (const name of applied) process.stdout.write(`applied ${name}\n`);
  process.stdout.write(
    applied.length > 0 ? `${path} is at schema version ${version}\n` : `${path} is at schema version ${version}; nothing to apply\n`,
  );
  return 0;
});
