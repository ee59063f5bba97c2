// scripts/migrate: create a database, or bring its schema up to date, and say what it
// applied. With the service's start, the one way a schema changes.
import { existsSync } from 'node:fs';
import { loadMigrations } from '../store/migrate.ts';
import { describeTarget, isPostgresUrl, openStore } from '../store/open.ts';
import { postgresMigrations } from '../store/postgres/schema.ts';
import { dbPathArg, parse, run, UsageError } from './common.ts';

const USAGE = `
Usage: scripts/migrate [--db PATH|URL]

Creates the database if there is none (the file readable by its owner only, 0600, and
any directory it makes 0700), or applies the migrations it lacks, all in one
transaction, and lists what it applied. Safe while the service runs. A schema newer
than this version knows is refused and left as it is.
  --db PATH|URL  the database file, or a postgres:// URL (default: $INVENTORY_DB,
                 else data/inventory.db)
  -h, --help   this text

Exit status: 0 success (also when there was nothing to do), 1 failure, 2 usage error.
`;

await run(USAGE, async (argv) => {
  const { values, positionals } = parse(argv, {});
  if (positionals.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(positionals[0])}`);
  const target = dbPathArg(values);
  const postgres = isPostgresUrl(target);
  const path = describeTarget(target);
  // A PostgreSQL database is created by its administrator; its schema is made here.
  const existed = postgres || existsSync(target);
  let applied: string[] = [];
  // Opened as the service opens it (not mustExist): creating and upgrading is the point.
  const store = await openStore(target, { onMigrated: (names) => (applied = names), listen: false });
  await store.close();
  const version = (postgres ? postgresMigrations() : loadMigrations()).at(-1)?.version ?? 0;
  if (!existed) process.stdout.write(`created ${path}\n`);
  for (const name of applied) process.stdout.write(`applied ${name}\n`);
  process.stdout.write(
    applied.length > 0 ? `${path} is at schema version ${version}\n` : `${path} is at schema version ${version}; nothing to apply\n`,
  );
  return 0;
});
