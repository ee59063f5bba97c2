// What every operator command shares: argument parsing with --db and --help, the
// database, the actor (cli:<operator>), and exit statuses (0 success, 1 failure,
// 2 usage error).
import { randomUUID } from 'node:crypto';
import { userInfo } from 'node:os';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { ConfigError, dbPathOf } from '../config.ts';
import { foreignSchemeProblem } from '../store/target.ts';
import type { EventMeta } from '../domain/events.ts';
import type { InventoryStore } from '../store/port.ts';
import { openStore as openAnyStore, type StoreOpenOptions } from '../store/open.ts';
import { argumentProblem, failureMessage } from '../support/messages.ts';

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
    return { values, positionals };
  } catch (err) {
    throw new UsageError(argumentProblem(err, argv));
  }
}

/** The database (a path, or a postgres:// URL): --db, else INVENTORY_DB, else the default. */
export function dbPathArg(values: Parsed['values']): string {
  // An empty path would open a temporary database that vanishes on close.
  if (typeof values.db === 'string' && values.db.trim() === '') throw new UsageError('--db must not be empty');
  if (typeof values.db !== 'string') return dbPathOf(process.env);
  const problem = foreignSchemeProblem(values.db, '--db');
  if (problem) throw new UsageError(problem);
  return values.db;
}

/**
 * The storage port over an existing database whose schema is current (read-only if
 * asked), writing in place: an operator command serves no one else while it waits, and
 * never creates a database or changes a schema; scripts/migrate does that. On PostgreSQL
 * it opens no LISTEN connection unless asked (listen: scripts/follow follows commits).
 */
export function openExistingStore(
  values: Parsed['values'],
  options: Pick<StoreOpenOptions, 'readonly' | 'listen' | 'auditing'> = {},
): Promise<InventoryStore> {
  return openAnyStore(dbPathArg(values), { listen: false, ...options, mustExist: true });
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
 * Runs a command's main function and exits with its status. Every error is one line
 * `error: …` on standard error: a UsageError (or a bad environment variable) exits 2 and
 * points to --help, any other error exits 1 (no stack, no raw Node.js words: operators
 * read it). A message of several lines keeps them, indented under the first.
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
      process.stderr.write(`${errorLine(err.message)}see --help\n`);
      status = 2;
    } else {
      process.stderr.write(errorLine(failureMessage(err)));
      status = 1;
    }
  }
  process.exitCode = status;
}

/** `error: ` and the message, its further lines (a file's problems) indented under it. */
function errorLine(message: string): string {
  const [first, ...rest] = message.split('\n');
  return `error: ${first}\n${rest.map((line) => `  ${line.trimStart()}\n`).join('')}`;
}
