// How the PostgreSQL store answers for itself: whether a COMMIT whose answer was lost
// took effect, whether the database takes writes now, and the pool's and the listening
// connection's state for readiness.
import type pg from 'pg';
import type { UnconfirmedBatch } from '../event-log.ts';
import type { StoreHealth } from '../health.ts';
import type { ChangeWatch } from './changes.ts';
import { NEWEST, requireHeadAtNewest } from './write/chain-head.ts';
import { checkout } from './transactions.ts';

/** Whether the batch's events are in the log, once the server process that got its COMMIT has ended. */
export async function commitOutcome(
  pool: pg.Pool,
  { seq, hash, backendPid }: UnconfirmedBatch,
): Promise<'committed' | 'not committed' | 'unknown'> {
  if (backendPid !== undefined) {
    const { rows } = await pool.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [backendPid]);
    if (rows.length > 0) throw new Error('the server process that received the COMMIT has not ended yet');
  }
  if (seq === undefined) return 'unknown';
  const { rows } = await pool.query<{ hash: string }>('SELECT hash FROM events WHERE seq = $1', [String(seq)]);
  return rows[0]?.hash === hash ? 'committed' : 'not committed';
}

/**
 * A real write, rolled back: fails while the database cannot take writes (a full disk,
 * a read-only server, a role without rights), or while the chain head is not at the
 * newest event (every write would fail).
 */
export async function probeWrite(pool: pg.Pool): Promise<void> {
  const { client, release } = await checkout(pool);
  let broken: Error | undefined;
  let probed: pg.QueryResult | pg.QueryResult[];
  try {
    probed = (await client.query(
      `BEGIN; INSERT INTO service_health (id, padding) VALUES (1, decode(repeat('00', 16384), 'hex')); SELECT seq, hash FROM chain_head; ${NEWEST}`,
    )) as pg.QueryResult | pg.QueryResult[];
  } catch (error) {
    broken = error as Error;
    throw error;
  } finally {
    await client.query('ROLLBACK').catch((error: Error) => (broken ??= error));
    release(broken);
  }
  requireHeadAtNewest(probed);
}

export function diagnostics(pool: pg.Pool, watch: ChangeWatch): ReturnType<StoreHealth['diagnostics']> {
  const { lastCommitSeenAt, lastCommitSeenAgeSeconds, ...notifications } = watch.status();
  return {
    store: 'postgres',
    pool: { total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount },
    connection: {
      pool: { inUse: pool.totalCount - pool.idleCount, idle: pool.idleCount, waiting: pool.waitingCount },
      notifications,
      lastCommitSeenAt,
      lastCommitSeenAgeSeconds,
    },
  };
}
