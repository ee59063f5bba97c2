// The idempotency_keys table on PostgreSQL, outside appendBatch (which checks and writes
// records under the chain head's lock): lookups, the count, and expiry in small steps
// that take no lock an append waits for (never the chain head; rows a batch holds are
// skipped, not waited for).
import type pg from 'pg';
import { pagesAfter, PAGE_ROWS, RECORD_COLUMNS, recordOfRow, type IdempotencyStore, type RecordRow } from '../idempotency.ts';

const FIND = `SELECT ${RECORD_COLUMNS.join(', ')} FROM idempotency_keys
  WHERE api_key = $1 AND path = $2 AND idempotency_key = $3 AND expires_at > $4`;

const EXPIRE = `DELETE FROM idempotency_keys WHERE ctid IN (
  SELECT ctid FROM idempotency_keys WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED)`;

export function makeIdempotency(pool: pg.Pool): IdempotencyStore {
  return {
    async find(s, at) {
      const { rows } = await pool.query<RecordRow>(FIND, [s.apiKey, s.path, s.key, at]);
      return rows[0] && recordOfRow(rows[0]);
    },
    async expire(at, limit) {
      return (await pool.query(EXPIRE, [at, limit])).rowCount ?? 0;
    },
    unexpired: (at) =>
      pagesAfter(async (after) => {
        const { rows } = await pool.query<RecordRow>(
          `SELECT ${RECORD_COLUMNS.join(', ')} FROM idempotency_keys
           WHERE expires_at > $1 AND (api_key, path, idempotency_key) > ($2, $3, $4)
           ORDER BY api_key, path, idempotency_key LIMIT ${PAGE_ROWS}`,
          [at, after?.apiKey ?? '', after?.path ?? '', after?.key ?? ''],
        );
        return rows.map(recordOfRow);
      }),
    async count() {
      const { rows } = await pool.query<{ n: bigint }>('SELECT count(*) AS n FROM idempotency_keys');
      return Number(rows[0]!.n);
    },
  };
}
