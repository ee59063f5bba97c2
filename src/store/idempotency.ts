// The idempotency records part of the storage port (port.ts): the stored answers of
// requests sent with an Idempotency-Key. A record is written by appendBatch, in the same
// transaction as its request's events (Submission.idempotency), so that a crash can never
// leave an event without its record or a record without its event; this role finds,
// counts and expires them. What every adapter shares lives here; the tables live with
// the adapter.

/** Where a key is unique: the API key (its name) that sent it. The path is the request's,
 * part of its fingerprint: the same key on another pet is another request (422). */
export interface IdempotencyScope {
  apiKey: string;
  key: string;
}

/** An answer as it is replayed: the status, its ETag (if any) and the body's exact text. */
export interface StoredAnswer {
  status: number;
  etag: string | null;
  body: string;
}

export interface IdempotencyRecord extends IdempotencyScope, StoredAnswer {
  /** The path of the request whose answer this is. */
  path: string;
  /** What the request asked for (method, path, body's value, preconditions), hashed. */
  fingerprint: string;
  createdAt: string;
  expiresAt: string;
  /** A stored 200's Log-Receipt, which a replay sends again. */
  receipt?: string | null;
}

/** What a submission asks appendBatch to record with its events. */
export interface RecordRequest {
  record: IdempotencyRecord;
  /**
   * The pet whose entry the answer was decided on, and its version then (0: not
   * tracked). A submission that appends no events (a 404 or 412) is checked against it,
   * as an append is: an answer decided on a state that another writer changed meanwhile
   * is decided again, not stored.
   */
  decidedOn: { petId: bigint; version: number };
}

/** What find says of a key that has no stored answer but that a batch (of any instance)
 * holds now: another request with it is being processed, and nothing of it was written.
 * The caller answers 409 and the client retries; the key is free again once that batch
 * ends, committed or not. */
export const KEY_IN_FLIGHT = 'in_flight' as const;

export interface IdempotencyStore {
  /**
   * The unexpired record of a key at time `at`, or undefined; KEY_IN_FLIGHT when there is
   * none yet and a batch (of any instance) holds the key, where the store can tell.
   */
  find(scope: IdempotencyScope, at: string): Promise<IdempotencyRecord | typeof KEY_IN_FLIGHT | undefined>;
  /**
   * Removes at most `limit` records that expired at `at`, in one short transaction that
   * takes no lock appends wait for (callers repeat it, yielding between steps); returns
   * how many it removed.
   */
  expire(at: string, limit: number): Promise<number>;
  /** How many records the table holds, expired ones not yet removed included. */
  count(): Promise<number>;
  /** The records unexpired at `at`, by key, a page at a time (copy-store moves them). */
  unexpired(at: string): AsyncIterable<IdempotencyRecord[]>;
}

/** Pages of records by (api_key, idempotency_key), each read after the last one's key. */
export async function* pagesAfter(
  page: (after: IdempotencyScope | undefined) => Promise<IdempotencyRecord[]>,
): AsyncIterable<IdempotencyRecord[]> {
  let after: IdempotencyScope | undefined;
  for (;;) {
    const rows = await page(after);
    if (rows.length === 0) return;
    yield rows;
    after = rows.at(-1);
  }
}

export const PAGE_ROWS = 1000;

/** A record's columns in table order, as both adapters write them. */
export const RECORD_COLUMNS = [
  'api_key',
  'path',
  'idempotency_key',
  'fingerprint',
  'status',
  'etag',
  'body',
  'created_at',
  'expires_at',
  'receipt',
] as const;

/** A row of idempotency_keys as both drivers return it. */
export type RecordRow = Record<(typeof RECORD_COLUMNS)[number], string | number | null>;

/** A row of idempotency_keys (RECORD_COLUMNS) as a record. */
export function recordOfRow(row: RecordRow): IdempotencyRecord {
  return {
    apiKey: String(row.api_key),
    path: String(row.path),
    key: String(row.idempotency_key),
    fingerprint: String(row.fingerprint),
    status: Number(row.status),
    etag: row.etag === null ? null : String(row.etag),
    body: String(row.body),
    createdAt: String(row.created_at),
    expiresAt: String(row.expires_at),
    receipt: row.receipt === null ? null : String(row.receipt),
  };
}

/** The record's values in RECORD_COLUMNS order. */
export function rowOfRecord(
  r: IdempotencyRecord,
): [string, string, string, string, number, string | null, string, string, string, string | null] {
  return [r.apiKey, r.path, r.key, r.fingerprint, r.status, r.etag, r.body, r.createdAt, r.expiresAt, r.receipt ?? null];
}

/** One string per scope, for maps. */
export function scopeId(s: IdempotencyScope): string {
  return JSON.stringify([s.apiKey, s.key]);
}
