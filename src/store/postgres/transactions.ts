// Work on one connection of the pool: a connection checked out and given back (dropped
// when the server ended it), reads and transactions whose every round trip ends by a
// deadline, and a COMMIT whose answer was lost told apart from a failure.
import type pg from 'pg';
import { CommitUnconfirmed } from '../event-log.ts';
import { enterCommit, type CommitGate } from '../commit-gate.ts';
import { DeadlinePassed } from '../health.ts';

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
  /** Entered just before COMMIT is sent (from then on its outcome may be unknown); a
   * transaction whose batch was given up rolls back instead. */
  gate?: CommitGate;
}

/** A connection of the pool by deadline; one that comes later goes back unused. */
async function checkoutBy(pool: pg.Pool, deadline: number): Promise<{ client: pg.PoolClient; release: (error?: Error) => void }> {
  const connecting = checkout(pool);
  let timer: NodeJS.Timeout | undefined;
  const deadlinePassed = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DeadlinePassed()), Math.max(0, deadline - Date.now()));
  });
  try {
    return await Promise.race([connecting, deadlinePassed]);
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
      if (Date.now() >= bounds.deadline || (bounds.gate && !enterCommit(bounds.gate))) throw new DeadlinePassed();
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
