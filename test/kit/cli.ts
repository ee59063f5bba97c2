// The operator commands' tests share these: the real wrapper scripts in scripts/, run as
// child processes against a fresh database per test on every store (a SQLite file, a
// PostgreSQL database), and judged by exit status, standard output and error, and the
// database contents.
import { userInfo } from 'node:os';
import * as assert from 'uvu/assert';
import type { Command } from '../../src/domain/decide.ts';
import { openDatabase } from '../../src/store/sqlite/database.ts';
import { runCommands } from './fixtures.ts';
import { tempDir, type TempDir } from './paths.ts';
import { runScriptSync, type ScriptResult as Result } from './scripts.ts';
import { storeTargets, type StoreTarget } from './stores.ts';
import { targetSuites } from './suites.ts';

/** An event's data column, the members tests read. */
export interface EventData {
  quantity?: number;
  status?: string;
  schemaVersion?: number;
}

export const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
export const KEY_LINE = /^pinv_[A-Za-z0-9]{32}\n$/;
export const operator = `cli:${userInfo().username}`;

/** Runs scripts/<name> with args; INVENTORY_DB is unset unless env sets it. */
export const script = (name: string, args: string[], env: Record<string, string> = {}): Result => runScriptSync(name, args, { env });

export function expectExit(r: Result, status: number, what: string): void {
  assert.is(r.status, status, `${what}: exit ${r.status}, expected ${status}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
}

/** A failure: exit 1 and one line `error: …` on standard error (more lines only when said). */
export function expectFailure(r: Result, message: RegExp, what: string): void {
  expectExit(r, 1, what);
  assert.match(r.stderr, /^error: [^\n]+\n$/, `${what}: one error line\n${r.stderr}`);
  assert.match(r.stderr, message, what);
}

/** A usage error: exit 2, one line `error: …`, then `see --help`; never the whole usage text. */
export function expectUsageError(r: Result, message: RegExp, what: string): void {
  expectExit(r, 2, what);
  assert.match(r.stderr, /^error: [^\n]+\nsee --help\n$/, `${what}: error line and see --help\n${r.stderr}`);
  assert.match(r.stderr, message, what);
  assert.is(r.stdout, '', what);
}

/** What Node.js or parseArgs would say, which an operator must never read. */
export const RAW_NODE = /ENOENT|EISDIR|EEXIST|ERR_|Option '|argument is ambiguous|no such file or directory|at .*\.ts:\d+/;

export interface Ctx {
  target: StoreTarget;
  scratch: TempDir;
  dir: string;
  /** The database: a file path (SQLite, not created yet) or a URL (an empty PostgreSQL database). */
  db: string;
  dropDb: () => Promise<void>;
}

/** Suites whose tests each get a fresh temporary directory and database, on every target. */
export function cliSuite(name: string, targets: StoreTarget[] = storeTargets()) {
  return targetSuites<Ctx>(
    name,
    {
      async beforeEach(ctx) {
        ctx.scratch = tempDir('inventory-cli-');
        ctx.dir = ctx.scratch.dir;
        if (ctx.target.name === 'sqlite') {
          ctx.db = ctx.scratch.path('inventory.db');
          ctx.dropDb = async () => {};
        } else {
          const fresh = await ctx.target.fresh();
          ctx.db = fresh.db;
          ctx.dropDb = fresh.cleanup;
        }
      },
      async afterEach(ctx) {
        ctx.scratch.cleanup();
        await ctx.dropDb();
      },
    },
    targets,
  );
}

/** Seeds a database in-process (saves a process start); the commands under test run as processes. */
export async function seed(ctx: Ctx, commands: Command[]): Promise<void> {
  const store = await ctx.target.open(ctx.db);
  try {
    await runCommands(store, commands);
  } finally {
    await store.close();
  }
}

/** A new, empty database of the current schema (operator commands create none). */
export async function createDb(ctx: Ctx): Promise<void> {
  if (ctx.target.name === 'sqlite') {
    openDatabase(ctx.db).close();
    return;
  }
  await (await ctx.target.open(ctx.db)).close();
}

export const track = (petId: bigint, quantity = 0, status: 'available' | 'pending' | 'sold' = 'available'): Command => ({
  type: 'TrackPet',
  petId,
  quantity,
  status,
});
