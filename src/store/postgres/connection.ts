// The connection settings every PostgreSQL connection of this service shares: bigint
// columns read as BigInt (ids above 2^53 stay exact), bounded waits (a database that is
// gone or stuck answers with an error, never a hang), and a URL shown without its password.
import { createRequire } from 'node:module';
import pg from 'pg';
import { CommitUnconfirmed } from '../event-log.ts';
import { DeadlinePassed } from '../health.ts';

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

/**
 * The bounds every session of the service sets on the server. A request is answered
 * within 5 s; a lock wait past SERVICE_LOCK_TIMEOUT_MS cannot fit in that (a table an
 * operator locked with LOCK TABLE, VACUUM FULL or REINDEX: the request is answered 503
 * instead of waiting for it), and a statement past SERVICE_STATEMENT_TIMEOUT_MS has been
 * given up by its client already. A transaction left idle (its instance frozen by
 * SIGSTOP, a VM pause or a partition, holding the chain head that every instance's writes
 * need) is ended by the server after IDLE_IN_TRANSACTION_MS, which releases its locks.
 * A batch sets its own lock timeout from its deadline (SET LOCAL).
 */
const SERVICE_LOCK_TIMEOUT_MS = 4_500;
const SERVICE_STATEMENT_TIMEOUT_MS = 6_000;
const IDLE_IN_TRANSACTION_MS = 6_000;
/** TCP keepalive, on both ends: a peer that is gone without a word (a host down, a cut
 * network) is noticed after about KEEPALIVE_IDLE_S + 3 x KEEPALIVE_INTERVAL_S seconds
 * instead of the hours a connection otherwise waits. */
const KEEPALIVE_IDLE_S = 5;
const KEEPALIVE_INTERVAL_S = 2;
const KEEPALIVE_COUNT = 3;

interface PoolOptions {
  /** Every transaction read-only, enforced by the server (the reading commands). */
  readonly?: boolean;
  /** The service's pool: every session bounded by the service's timeouts above. */
  service?: boolean;
  max?: number;
}

/**
 * The settings every connection of ours sends at its start: TCP keepalive on the
 * server's side too, and for connections that write, the idle-in-transaction bound, so
 * that no frozen process of ours (the service or an operator command stopped with
 * Ctrl-Z) holds the chain head for longer than seconds. Reading commands are left
 * unbounded: an auditor's export may pause on a slow pipe inside its snapshot.
 */
export function sessionSettings(options: PoolOptions = {}): pg.ClientConfig {
  const server = [
    `-c tcp_keepalives_idle=${KEEPALIVE_IDLE_S}`,
    `-c tcp_keepalives_interval=${KEEPALIVE_INTERVAL_S}`,
    `-c tcp_keepalives_count=${KEEPALIVE_COUNT}`,
  ];
  if (options.readonly) server.push('-c default_transaction_read_only=on');
  return {
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEPALIVE_IDLE_S * 1000,
    options: server.join(' '),
    ...(options.readonly ? {} : { idle_in_transaction_session_timeout: IDLE_IN_TRANSACTION_MS }),
    ...(options.service ? { lock_timeout: SERVICE_LOCK_TIMEOUT_MS, statement_timeout: SERVICE_STATEMENT_TIMEOUT_MS } : {}),
  };
}

const requireHere = createRequire(import.meta.url);
/** node-pg's own pgpass reader and URL parser, dependencies of pg (package.json names them). */
const pgpass = requireHere('pgpass') as (connection: object, found: (password?: string) => void) => void;
const { parse: parseUrl } = requireHere('pg-connection-string') as { parse: (url: string) => Record<string, unknown> };

/**
 * How node-pg connects to url. A URL without a password takes it from ~/.pgpass (or
 * PGPASSFILE), as libpq does, read here through the same pgpass module: node-pg's own
 * reading of the file is deprecated and prints a DeprecationWarning on every connection
 * a command makes. node-pg lets a connection string's fields override the others, so
 * such a URL is given as its parsed fields (what node-pg would parse) and the lookup.
 */
export function connectionOf(url: string): pg.ClientConfig {
  if (process.env.PGPASSWORD !== undefined) return { connectionString: url };
  let parsed: Record<string, unknown>;
  try {
    parsed = parseUrl(url);
  } catch {
    return { connectionString: url };
  }
  if (typeof parsed.password === 'string' && parsed.password !== '') return { connectionString: url };
  // node-pg calls it with the connection's parameters (host, port, database, user) and
  // takes undefined as no password, which its types leave out.
  const lookup = (connection: object) => new Promise<string | undefined>((resolve) => pgpass(connection, resolve));
  return { ...(parsed as pg.ClientConfig), password: lookup as unknown as () => Promise<string> };
}

export function makePool(url: string, options: PoolOptions = {}): pg.Pool {
  const pool = new pg.Pool({
    ...connectionOf(url),
    types,
    max: options.max ?? 10,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    query_timeout: QUERY_TIMEOUT_MS,
    idleTimeoutMillis: 30_000,
    application_name: 'petstore-inventory',
    ...sessionSettings(options),
  });
  // An idle connection that the server closes (a restart) emits an error on the pool;
  // the pool drops it and makes a new one when next needed. Unhandled, it would end the
  // process.
  pool.on('error', () => {});
  return pool;
}

/**
 * The URL as messages may show it: without any credential it can carry. The driver takes
 * a password in the user part and as a `password` parameter, and passes parameters such
 * as `sslpassword` on: every parameter whose name holds "password" is masked, and the
 * fragment dropped (an unescaped "#" in a password starts one). A URL the URL parser
 * refuses is not shown at all, since where its password ends cannot be told.
 */
export function redactUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'the PostgreSQL database';
  }
  if (parsed.password) parsed.password = '***';
  for (const name of new Set(parsed.searchParams.keys())) {
    if (/password/i.test(name)) parsed.searchParams.set(name, '***');
  }
  parsed.hash = '';
  return parsed.toString();
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
  // Every credential redactUrl masks is left out here: the user part's password, and
  // every parameter that holds one (password, sslpassword).
  const secretParams = [...new Set(parsed.searchParams.keys())].filter((name) => /password/i.test(name));
  const hadPassword = parsed.password !== '' || secretParams.length > 0;
  parsed.password = '';
  for (const name of secretParams) parsed.searchParams.delete(name);
  parsed.hash = '';
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

/** How long a COMMIT sent just before its deadline may take to answer: the client is
 * answered at its deadline anyway; this is how long the batch waits to learn its fate. */
const COMMIT_GRACE_MS = 5_000;

/** The deadline of a transaction (Date.now()): every round trip gets what is left of it. */
interface TransactionBounds {
  deadline: number;
  /** Just before COMMIT is sent: from then on its outcome may be unknown. */
  onCommitting?: () => void;
}

/** A connection of the pool by deadline; one that comes later goes back unused. */
async function checkoutBy(pool: pg.Pool, deadline: number): Promise<{ client: pg.PoolClient; release: (error?: Error) => void }> {
  const connecting = checkout(pool);
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DeadlinePassed()), Math.max(0, deadline - Date.now()));
  });
  try {
    return await Promise.race([connecting, late]);
  } catch (error) {
    connecting.then(
      (c) => c.release(),
      () => undefined,
    );
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

type Query = pg.ClientBase['query'];

/**
 * The connection as the work inside a bounded transaction sees it: each query with
 * what is left of the deadline as its timeout (node-postgres's query_timeout), so a
 * server that stops answering without closing the connection fails the query in time.
 */
function bounded(client: pg.PoolClient, deadline: number, graceMs = 0): pg.PoolClient {
  const query = (config: string | pg.QueryConfig, values?: unknown[]) => {
    const left = deadline - Date.now() + graceMs;
    if (left <= 0) return Promise.reject(new DeadlinePassed());
    const asConfig = typeof config === 'string' ? { text: config } : config;
    return client.query({ ...asConfig, ...(values === undefined ? {} : { values }), query_timeout: left } as pg.QueryConfig);
  };
  return { query: query as Query, processID: (client as pg.PoolClient & { processID?: number }).processID } as unknown as pg.PoolClient;
}

/** Errors after which the connection's state is unknown: it must not be used again. */
function connectionLost(error: unknown): boolean {
  if (error instanceof DeadlinePassed) return true;
  const { code, message } = error as { code?: unknown; message?: unknown };
  if (typeof code === 'string') return /^(08|57)/.test(code) || /^E[A-Z]+$/.test(code);
  return typeof message === 'string' && /^(Query read timeout|Connection terminated)/.test(message);
}

/** Reads on one connection of the pool, every round trip ending by the deadline. */
export async function readBy<T>(pool: pg.Pool, deadline: number, read: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const { client, release } = await checkoutBy(pool, deadline);
  let broken: Error | undefined;
  try {
    return await read(bounded(client, deadline));
  } catch (error) {
    if (connectionLost(error)) broken = error as Error;
    throw error;
  } finally {
    release(broken);
  }
}

/**
 * Runs work in one transaction on one connection of the pool: COMMIT, or ROLLBACK and
 * rethrow. With bounds, every round trip ends by the deadline, no COMMIT is sent after
 * it, and a COMMIT that was sent but whose answer is lost (a timeout, the connection
 * gone) rejects with CommitUnconfirmed.
 */
export async function inTransaction<T>(
  pool: pg.Pool,
  begin: string,
  work: (client: pg.PoolClient, begun: pg.QueryResult | pg.QueryResult[]) => Promise<T>,
  bounds?: TransactionBounds,
): Promise<T> {
  const { client: raw, release } = bounds ? await checkoutBy(pool, bounds.deadline) : await checkout(pool);
  const client = bounds ? bounded(raw, bounds.deadline) : raw;
  let broken: Error | undefined;
  let committing = false;
  try {
    // Several statements in one string (BEGIN; SET LOCAL …; SELECT …) go in one round
    // trip and come back as one result each.
    const begun = (await client.query(begin)) as pg.QueryResult | pg.QueryResult[];
    const result = await work(client, begun);
    if (bounds) {
      if (Date.now() >= bounds.deadline) throw new DeadlinePassed();
      bounds.onCommitting?.();
    }
    committing = true;
    await (bounds ? bounded(raw, bounds.deadline, COMMIT_GRACE_MS) : raw).query('COMMIT');
    return result;
  } catch (error) {
    if (committing && connectionLost(error)) {
      broken = error as Error;
      throw new CommitUnconfirmed({ backendPid: (raw as pg.PoolClient & { processID?: number }).processID }, { cause: error });
    }
    if (connectionLost(error)) {
      // A ROLLBACK would wait on the same silent connection: it is dropped instead, and
      // the server rolls back once it sees it closed.
      broken = error as Error;
      throw error;
    }
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
