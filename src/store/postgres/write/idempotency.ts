// The idempotency_keys table on PostgreSQL. A batch reads its keys' records (loadRecords)
// and writes new ones under the chain head's lock; outside batches: lookups, the count,
// and expiry in small steps that take no lock an append waits for (never the chain head;
// rows a batch holds are skipped, not waited for).
//
// A key in flight: a batch takes a transaction-level advisory lock on each of its keys
// (keyLockOf) before it waits for the chain head, and holds it until it commits or rolls
// back. A lookup sees that lock in pg_locks without taking it (so it never makes a batch
// fail), and another batch that cannot take it leaves that submission out. The lock is
// PostgreSQL's own: it ends with the transaction or the session, so an instance that
// dies leaves no key in flight, and nothing is written for it.
import { createHash } from 'node:crypto';
import type pg from 'pg';
import {
  KEY_IN_FLIGHT,
  pagesAfter,
  PAGE_ROWS,
  RECORD_COLUMNS,
  recordOfRow,
  scopeId,
  type IdempotencyRecord,
  type IdempotencyScope,
  type IdempotencyStore,
  type RecordRow,
} from '../../idempotency.ts';

/** The advisory lock of a key in flight: 64 bits of a hash of its scope (a signed bigint). */
export function keyLockOf(scope: IdempotencyScope): bigint {
  return createHash('sha256').update(scopeId(scope)).digest().readBigInt64BE(0);
}

// The record, or whether a batch holds the key's lock now ($4, $5: the lock's high and
// low 32 bits, as pg_locks shows a one-bigint advisory lock, objsubid 1).
const FIND = `SELECT k.*, EXISTS (
    SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1
      AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
      AND classid = $4::oid AND objid = $5::oid) AS in_flight
  FROM (SELECT 1) AS one LEFT JOIN (
    SELECT ${RECORD_COLUMNS.join(', ')} FROM idempotency_keys
    WHERE api_key = $1 AND idempotency_key = $2 AND expires_at > $3) AS k ON true`;

const EXPIRE = `DELETE FROM idempotency_keys WHERE ctid IN (
  SELECT ctid FROM idempotency_keys WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED)`;

export function makeIdempotency(pool: pg.Pool): IdempotencyStore {
  return {
    async find(s, at) {
      const lock = BigInt.asUintN(64, keyLockOf(s));
      const { rows } = await pool.query<RecordRow & { in_flight: boolean }>(FIND, [
        s.apiKey,
        s.key,
        at,
        String(lock >> 32n),
        String(lock & 0xffffffffn),
      ]);
      const row = rows[0]!;
      if (row.api_key !== null) return recordOfRow(row);
      if (row.in_flight) return KEY_IN_FLIGHT;
      return undefined;
    },
    async expire(at, limit) {
      return (await pool.query(EXPIRE, [at, limit])).rowCount ?? 0;
    },
    unexpired: (at) =>
      pagesAfter(async (after) => {
        const { rows } = await pool.query<RecordRow>(
          `SELECT ${RECORD_COLUMNS.join(', ')} FROM idempotency_keys
           WHERE expires_at > $1 AND (api_key, idempotency_key) > ($2, $3)
           ORDER BY api_key, idempotency_key LIMIT ${PAGE_ROWS}`,
          [at, after?.apiKey ?? '', after?.key ?? ''],
        );
        return rows.map(recordOfRow);
      }),
    async count() {
      const { rows } = await pool.query<{ n: bigint }>('SELECT count(*) AS n FROM idempotency_keys');
      return Number(rows[0]!.n);
    },
  };
}

const RECORDS = `SELECT ${RECORD_COLUMNS.join(', ')} FROM idempotency_keys
  WHERE (api_key, idempotency_key) IN (SELECT * FROM unnest($1::text[], $2::text[]))`;

/** The stored records of the batch's keys, read under the chain head's lock (every writer
 * of records holds it), so that no other instance can store one of them meanwhile. */
export async function loadRecords(client: pg.PoolClient, scopes: readonly IdempotencyScope[]): Promise<Map<string, IdempotencyRecord>> {
  const found = new Map<string, IdempotencyRecord>();
  if (scopes.length === 0) return found;
  const { rows } = await client.query<RecordRow>(RECORDS, [scopes.map((s) => s.apiKey), scopes.map((s) => s.key)]);
  for (const row of rows) {
    const record = recordOfRow(row);
    found.set(scopeId(record), record);
  }
  return found;
}
