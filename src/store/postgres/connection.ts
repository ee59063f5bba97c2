// The connection settings every PostgreSQL connection of this service shares: bigint
// columns read as BigInt (ids above 2^53 stay exact), bounded waits (a database that is
// gone or stuck answers with an error, never a hang), and a URL shown without its password.
import { createRequire } from 'node:module';
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
