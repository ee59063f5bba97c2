// What every operator command shares: argument parsing with --db and --help, the
// database, the actor (cli:<operator>), and exit statuses (0 success, 1 failure,
// 2 usage error).
import { randomUUID } from 'node:crypto';
import { userInfo } from 'node:os';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { ConfigError, dbPathOf } from '../config.ts';
import type { EventMeta } from '../domain/events.ts';
import type { InventoryStore } from '../store/port.ts';
import { openSqliteStore, type SqliteOpenOptions } from '../store/sqlite/store.ts';

export class UsageError extends Error {
  override name = 'UsageError';
}

type Options = NonNullable<ParseArgsConfig['options']>;

export interface Parsed {
  values: Record<string, string | boolean | undefined>;
  positionals: string[];
}

export function parse(argv: string[], options: Options): Parsed {
  try {
    const { values, positionals } = parseArgs({
      args: argv,
      options: { ...options, db: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
      allowPositionals: true,
      strict: true,
    });
    return { values: values as Parsed['values'], positionals };
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

/** The storage port over --db (or INVENTORY_DB), writing in place: an operator command
 * serves no one else while it waits. */
export function openStore(values: Parsed['values'], options?: Pick<SqliteOpenOptions, 'readonly' | 'mustExist'>): Promise<InventoryStore> {
  // An empty path would open a temporary database that vanishes on close.
  if (typeof values.db === 'string' && values.db.trim() === '') throw new UsageError('--db must not be empty');
  const path = typeof values.db === 'string' ? values.db : dbPathOf(process.env);
  return openSqliteStore(path, options);
}

/** The operator's events: actor cli:<user name>, one request id for the whole command. */
export function operatorMeta(): EventMeta {
  let name: string;
  try {
    name = userInfo().username;
  } catch {
    name = process.env.USER ?? process.env.LOGNAME ?? 'unknown';
  }
  return { actor: `cli:${name}`, requestId: randomUUID() };
}

/**
 * Runs a command's main function and exits with its status. A UsageError exits 2 with
 * the usage text; any other error exits 1 with its message (no stack: operators read it).
 */
export async function run(usage: string, main: (argv: string[]) => Promise<number> | number): Promise<void> {
  const argv = process.argv.slice(2);
  let status: number;
  try {
    if (argv.includes('--help') || argv.includes('-h')) {
      process.stdout.write(`${usage.trim()}\n`);
      status = 0;
    } else {
      status = await main(argv);
    }
  } catch (err) {
    if (err instanceof UsageError || err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n\n${usage.trim()}\n`);
      status = 2;
    } else {
      process.stderr.write(`error: ${(err as Error).message}\n`);
      status = 1;
    }
  }
  process.exitCode = status;
}
