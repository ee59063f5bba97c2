// Plain SQL on a test's database, on either store, as anyone with access to it could run
// it: `?` for parameters, integers back as BigInt on both (as better-sqlite3 gives them
// with safeIntegers), and whether a command left no database behind.
import { existsSync } from 'node:fs';
import Database from 'better-sqlite3';
import pg from 'pg';

export interface OnDatabase {
  target: { name: 'sqlite' | 'postgres' };
  /** A SQLite file path or a PostgreSQL URL. */
  db: string;
}

const int8AsBigInt = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === 20 ? (v: string) => BigInt(v) : (pg.types.getTypeParser(oid, format) as unknown)) as typeof pg.types.getTypeParser,
};

/** Reads the database with a plain connection, `?` for parameters; integers come back as BigInt on both stores. */
export async function query<T = Record<string, unknown>>(ctx: OnDatabase, sql: string, ...params: unknown[]): Promise<T[]> {
  if (ctx.target.name === 'sqlite') {
    const db = new Database(ctx.db, { readonly: true, fileMustExist: true });
    try {
      return db
        .prepare(sql)
        .safeIntegers(true)
        .all(...params) as T[];
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({ connectionString: ctx.db, types: int8AsBigInt });
  await client.connect();
  try {
    let n = 0;
    const { rows } = await client.query<Record<string, unknown>>(
      sql.replace(/\?/g, () => `$${++n}`),
      params.map((p) => (typeof p === 'bigint' ? String(p) : p)),
    );
    return rows.map((row) => Object.fromEntries(Object.entries(row).map(([k, v]) => [k, typeof v === 'number' ? BigInt(v) : v]))) as T[];
  } finally {
    await client.end();
  }
}

/** Runs sql (one or more statements) with a plain read-write connection, as anyone with access could. */
export async function execute(ctx: OnDatabase, sql: string): Promise<void> {
  if (ctx.target.name === 'sqlite') {
    const db = new Database(ctx.db, { fileMustExist: true });
    try {
      db.exec(sql);
    } finally {
      db.close();
    }
    return;
  }
  const client = new pg.Client({ connectionString: ctx.db });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

export async function countEvents(ctx: OnDatabase): Promise<bigint> {
  return (await query<{ n: bigint }>(ctx, 'SELECT count(*) AS n FROM events'))[0]!.n;
}

/** Whether the command left no database behind: no file, or no table in the PostgreSQL database. */
export async function noDatabase(ctx: OnDatabase): Promise<boolean> {
  if (ctx.target.name === 'sqlite') return !existsSync(ctx.db);
  const client = new pg.Client({ connectionString: ctx.db });
  await client.connect();
  try {
    const { rows } = await client.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = 'public'",
    );
    return rows[0]!.n === 0;
  } finally {
    await client.end();
  }
}
