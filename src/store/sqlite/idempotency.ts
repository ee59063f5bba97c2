// The idempotency_keys table on SQLite: what the writer checks and records inside a
// batch's transaction, the expiry steps it runs between batches, and what the readers
// look up. Expired records count as absent everywhere, removed or not.
import type { Db } from './database.ts';
import {
  PAGE_ROWS,
  RECORD_COLUMNS,
  recordOfRow,
  rowOfRecord,
  type IdempotencyRecord,
  type IdempotencyScope,
  type RecordRow,
} from '../idempotency.ts';

const FIND = `SELECT ${RECORD_COLUMNS.join(', ')} FROM idempotency_keys
  WHERE api_key = ? AND idempotency_key = ? AND expires_at > ?`;

export interface IdempotencyTable {
  find(scope: IdempotencyScope, at: string): IdempotencyRecord | undefined;
  count(): number;
  /** Unexpired records at `at` after the key `after`, by key, at most PAGE_ROWS. */
  page(at: string, after: IdempotencyScope | undefined): IdempotencyRecord[];
}

export function makeIdempotencyReader(db: Db): IdempotencyTable {
  const find = db.prepare(FIND);
  const count = db.prepare('SELECT count(*) FROM idempotency_keys').pluck();
  const page = db.prepare(
    `SELECT ${RECORD_COLUMNS.join(', ')} FROM idempotency_keys
     WHERE expires_at > ? AND (api_key, idempotency_key) > (?, ?)
     ORDER BY api_key, idempotency_key LIMIT ${PAGE_ROWS}`,
  );
  return {
    page: (at, after) => (page.all(at, after?.apiKey ?? '', after?.key ?? '') as RecordRow[]).map(recordOfRow),
    find: (s, at) => {
      const row = find.get(s.apiKey, s.key, at) as RecordRow | undefined;
      return row && recordOfRow(row);
    },
    count: () => count.get() as number,
  };
}

export interface IdempotencyWriter extends IdempotencyTable {
  /** The record stored for a key, expired or not (the batch planner judges expiry). */
  stored(scope: IdempotencyScope): IdempotencyRecord | undefined;
  /** Inside a transaction: stores the record, in place of an expired one with its key. */
  put(record: IdempotencyRecord): void;
  /** One short transaction: removes at most limit records expired at `at`. */
  expire(at: string, limit: number): number;
}

export function makeIdempotencyWriter(db: Db): IdempotencyWriter {
  const reader = makeIdempotencyReader(db);
  const put = db.prepare(
    `INSERT OR REPLACE INTO idempotency_keys (${RECORD_COLUMNS.join(', ')}) VALUES (${RECORD_COLUMNS.map(() => '?').join(', ')})`,
  );
  // By the expiry index, oldest first: each step touches only the rows it removes.
  const expire = db.prepare(
    `DELETE FROM idempotency_keys WHERE (api_key, idempotency_key) IN (
       SELECT api_key, idempotency_key FROM idempotency_keys WHERE expires_at <= ? ORDER BY expires_at LIMIT ?)`,
  );
  const step = db.transaction((at: string, limit: number) => expire.run(at, limit).changes);
  const stored = db.prepare(`SELECT ${RECORD_COLUMNS.join(', ')} FROM idempotency_keys WHERE api_key = ? AND idempotency_key = ?`);
  return {
    ...reader,
    stored: (s) => {
      const row = stored.get(s.apiKey, s.key) as RecordRow | undefined;
      return row && recordOfRow(row);
    },
    put: (record) => void put.run(...rowOfRecord(record)),
    expire: (at, limit) => step.immediate(at, limit),
  };
}
