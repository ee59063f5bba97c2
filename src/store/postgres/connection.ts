// The connection settings every PostgreSQL connection of this service shares: bigint
// columns read as BigInt (ids above 2^53 stay exact), bounded waits (a database that is
// gone or stuck answers with an error, never a hang), and a URL shown without its password.
import pg from 'pg';

/** pg's parsers, except int8 (OID 20) as BigInt instead of a string. */
const int8 = (value: string) => BigInt(value);
const types = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') => {
    if (oid === 20) return int8;
    // pg's own table: its typing says any, it returns the parser for that type.
    return pg.types.getTypeParser(oid, format) as unknown;
  }) as typeof pg.types.getTypeParser,
};

/** How long a new connection may take before the request that needs it fails. */
export const CONNECT_TIMEOUT_MS = 5_000;
/** No single statement of ours takes long (scans are read in pages); past this the
 * connection is presumed lost and the caller gets an error, not a hang. */
export const QUERY_TIMEOUT_MS = 15_000;

export interface PoolOptions {
  /** Every transaction read-only, enforced by the server (the reading commands). */
  readonly?: boolean;
  max?: number;
}

export function makePool(url: string, options: PoolOptions = {}): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    types,
    max: options.max ?? 10,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    query_timeout: QUERY_TIMEOUT_MS,
    idleTimeoutMillis: 30_000,
    application_name: 'petstore-inventory',
    options: options.readonly ? '-c default_transaction_read_only=on' : undefined,
  });
  // An idle connection that the server closes (a restart) emits an error on the pool;
  // the pool drops it and makes a new one when next needed. Unhandled, it would end the
  // process.
  pool.on('error', () => {});
  return pool;
}

/** The URL as messages may show it: without a password. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return 'the PostgreSQL database';
  }
}

/**
 * The URL as a command line an operator can paste: without its password (redactUrl's
 * *** would be taken for the password), in single quotes for the shell, and what to do
 * about the password when one was left out (node-postgres reads PGPASSWORD).
 */
export function pasteableUrl(url: string): { arg: string; note: string } {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { arg: "'postgres://…'", note: ' (the URL cannot be shown: use the one you gave)' };
  }
  const hadPassword = parsed.password !== '';
  parsed.password = '';
  return {
    arg: `'${parsed.toString().replaceAll("'", "'\\''")}'`,
    note: hadPassword ? ' (the password is left out: set PGPASSWORD, or put it back in the URL)' : '',
  };
}

export function isPostgresUrl(target: string): boolean {
  return /^postgres(ql)?:\/\//i.test(target);
}

/**
 * A connection taken from the pool for a while. A connection the server ends while it is
 * out of the pool and between queries (a restart, an administrator) emits 'error': heard
 * here, it is kept from being given back to the pool (release with the error destroys
 * it) instead of ending the process as an unheard error event would.
 */
export async function checkout(pool: pg.Pool): Promise<{ client: pg.PoolClient; release: (error?: Error) => void }> {
  const client = await pool.connect();
  let lost: Error | undefined;
  const onError = (error: Error) => (lost = error);
  client.on('error', onError);
  return {
    client,
    release: (error) => {
      client.off('error', onError);
      client.release(error ?? lost);
    },
  };
}

/** Runs work in one transaction on one connection of the pool: COMMIT, or ROLLBACK and rethrow. */
export async function inTransaction<T>(
  pool: pg.Pool,
  begin: string,
  work: (client: pg.PoolClient, begun: pg.QueryResult | pg.QueryResult[]) => Promise<T>,
): Promise<T> {
  const { client, release } = await checkout(pool);
  let broken: Error | undefined;
  try {
    // Several statements in one string (BEGIN; SET LOCAL …; SELECT …) go in one round
    // trip and come back as one result each.
    const begun = (await client.query(begin)) as pg.QueryResult | pg.QueryResult[];
    const result = await work(client, begun);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    try {
      await client.query('ROLLBACK');
    } catch (rollbackError) {
      // The connection itself failed: it must not go back to the pool.
      broken = rollbackError as Error;
    }
    throw error;
  } finally {
    release(broken);
  }
}
