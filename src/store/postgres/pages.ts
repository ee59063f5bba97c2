// Results in pages: every read of more than a row comes as keyset pages of PAGE_ROWS
// rows, in arrays (rowMode), so that no result is parsed in one piece on the event loop.
// SNAPSHOT begins the transaction in which reads that must agree with each other run.
import type pg from 'pg';

export const PAGE_ROWS = 256;
export const SNAPSHOT = 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY';

export type Queryable = pg.Pool | pg.ClientBase;

export async function page<T>(db: Queryable, text: string, values: unknown[]): Promise<T[]> {
  return (await db.query({ text, values, rowMode: 'array' })).rows as T[];
}
