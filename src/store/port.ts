// The storage port: everything the service and the operator commands ask of a database,
// as one small asynchronous interface. Each database has one adapter behind it
// (src/store/sqlite/ today); nothing above this file knows which, or speaks SQL.
//
// Writes follow emmett's appendToStream: the caller decides against the entry it
// loaded and appends with the version it expects; the store checks that version inside
// its transaction and reports a VersionConflict when another writer came first, and
// the caller loads again and decides again.
import type { DomainEvent, EntryState, EventMeta, PetStatus, RecordedEvent } from '../domain/events.ts';
import type { IdempotencyRecord, IdempotencyStore, RecordRequest } from './idempotency.ts';
import type { KeyStore } from './keys.ts';

/** One inventory entry: a row of the projection. */
export interface Entry extends EntryState {
  petId: bigint;
  updatedAt: string;
}

/** Events for one pet, decided against the entry at expectedVersion (0: not tracked). */
export interface StreamAppend {
  petId: bigint;
  expectedVersion: number;
  events: DomainEvent[];
}

/** What one command (or one operator's file of commands) appends: all or nothing. */
export interface Submission {
  meta: EventMeta;
  recordedAt: string;
  appends: StreamAppend[];
  /** The answer to record with the events (a request with an Idempotency-Key): a key
   * already used fails the submission with IdempotencyKeyTaken, nothing written. A
   * submission may record an answer and append nothing (a 404 or 412). */
  idempotency?: RecordRequest;
}

export interface Appended {
  entry: Entry;
  events: RecordedEvent[];
}

export interface BatchOptions {
  /** Wall-clock time (Date.now) after which the batch stops waiting for the write lock
   * and rejects with a contention error (SQLITE_BUSY), nothing of it written. On
   * PostgreSQL every round trip of the batch is bounded by it, and no COMMIT is sent
   * after it. */
  waitUntil?: number;
  /** Called once the store can no longer promise that the batch will not commit: just
   * before COMMIT is sent (PostgreSQL), or when the batch is handed to the writer thread
   * (SQLite). A client answered after that without the batch's result cannot be told
   * that nothing was written. */
  onCommitting?: () => void;
}

export interface EntryReadOptions {
  /** Wall-clock time (Date.now) by which the read answers or fails. */
  waitUntil?: number;
}

export type Outcome<R> = { ok: true; value: R } | { ok: false; error: unknown };

/** The entry is no longer at the version the append was decided against. */
export class VersionConflict extends Error {
  constructor(
    readonly petId: bigint,
    readonly expected: number,
    readonly actual: number | undefined,
  ) {
    super(`pet ${petId} is at version ${actual ?? 'unknown'}, not ${expected} as decided`);
    this.name = 'VersionConflict';
  }
}

/**
 * The store knows it cannot take writes now (its writer stopped) without trying. A
 * write that was under way when it stopped may or may not have been committed: it was
 * not acknowledged, and the client may retry (a PATCH sets a quantity, so a retry
 * cannot count twice).
 */
export class StoreUnavailable extends Error {
  override name = 'StoreUnavailable';
}

/** The database did not answer within the request's time; nothing of it was written. */
export class DeadlinePassed extends StoreUnavailable {
  override name = 'DeadlinePassed';
  constructor(what = 'the database did not answer in time') {
    super(what);
  }
}

/** Where a batch whose commit could not be confirmed left the chain, to look it up later. */
export interface UnconfirmedBatch {
  /** The seq and hash the batch's last event has if it committed; undefined when it appended no event. */
  seq?: bigint;
  hash?: string;
  /** PostgreSQL: the server process of the connection that sent the COMMIT. */
  backendPid?: number;
}

/**
 * A batch's COMMIT was sent (or the disk failed while it was written) and its result
 * could not be seen: it may or may not have been applied. Unlike every other 503, the
 * client cannot be told that nothing was written.
 */
export class CommitUnconfirmed extends Error {
  override name = 'CommitUnconfirmed';
  constructor(
    readonly batch: UnconfirmedBatch,
    options?: { cause?: unknown },
  ) {
    super('the commit was sent but its result could not be confirmed', options);
  }
}

/** A projection row for GET /v1/inventory: [petId, quantity, status, version]. */
export type InventoryRow = [petId: bigint, quantity: number, status: PetStatus, version: number];

/** An event row as a replay reads it (integers as BigInt). */
export type ReplayRow = [seq: bigint, petId: bigint, version: bigint, type: string, data: string, recordedAt: string];

/** An event row with its chain columns, as verify-log reads it (integers as BigInt). */
export type ChainRow = [
  seq: bigint,
  petId: bigint,
  version: bigint,
  type: string,
  data: string,
  actor: string,
  requestId: string,
  recordedAt: string,
  prevHash: string | null,
  hash: string | null,
];

/** A row of the key log (api_key_events) with its chain columns, as verify-log reads it. */
export type KeyChainRow = [
  seq: bigint,
  type: string,
  name: string,
  keyHash: string,
  recordedAt: string,
  actor: string,
  prevHash: string,
  hash: string,
];

/** What verify-log checks beside the events, read from one snapshot. */
export interface KeyHistory {
  /** The key log by seq. */
  events: KeyChainRow[];
  /** The api_keys rows, which the key log must account for exactly. */
  keys: KeyRecord[];
  /** The highest seq each log ever handed out (sqlite_sequence, the chain heads): above
   * the newest row, the newest rows were cut off. */
  counters: { events: number; keys: number };
}

/** The newest event and the newest key event: the digests an auditor keeps. */
export interface LogHead {
  /** 0 and 64 zeros for an empty log. */
  seq: number;
  hash: string;
  /** The newest event's time; null for an empty log. */
  recordedAt: string | null;
  keys: { seq: number; hash: string };
}

/** A row of the stock_adjustments view, integers as BigInt. */
export type AdjustmentRow = Record<
  'seq' | 'recorded_at' | 'pet_id' | 'previous_quantity' | 'quantity' | 'delta' | 'actor' | 'request_id',
  bigint | number | string | null
>;

export interface AuditFilter {
  pet?: bigint;
  actor?: string;
  /** Inclusive, as recorded_at writes times. */
  since?: string;
  /** Exclusive. */
  until?: string;
}

export interface SeqRange {
  after?: number;
  upTo?: number;
}

/** One consistent view of the log and the projection (a rebuild's --check reads it). */
export interface LogView {
  lastSeq: number;
  replayRows(range?: SeqRange): AsyncIterable<ReplayRow[]>;
  entries(): Promise<Entry[]>;
}

/** What readiness shows of the storage's write-ahead log. */
export interface StorageStatus {
  /** The log's size now. */
  walBytes: number;
  /** What an idle service checkpoints the log back to (or below). */
  walLimitBytes: number;
  /**
   * For how long checkpoints have been held back, null when they are not: the log has
   * frames that cannot be copied back (or cannot be emptied) because a read transaction
   * still reads an older snapshot. SQLite does not name the readers of other processes,
   * so this is the stand-in for the age of the oldest open read transaction.
   */
  walCheckpointBlockedForMs: number | null;
}

/** A key as the database keeps it: its hash, never the key. Only copy-store reads these. */
export interface KeyRecord {
  name: string;
  hash: string;
  createdAt: string;
  createdBy: string;
  revokedAt: string | null;
  revokedBy: string | null;
}

/** What copy-store moves into an empty store, and what it found there. */
export interface HistoryImport {
  /** Events in seq order, with their chain columns as they are (verbatim). */
  events: AsyncIterable<ChainRow[]>;
  keys: KeyRecord[];
  /** The stored answers of Idempotency-Keys still unexpired, so that retries of PATCHes
   * answered before the move are replayed after it. */
  idempotency?: AsyncIterable<IdempotencyRecord[]>;
  /** The key log, verbatim. */
  keyEvents: KeyChainRow[];
}

/** The target of a copy was not empty: nothing was written. */
export class StoreNotEmpty extends Error {
  override name = 'StoreNotEmpty';
}

export interface InventoryStore {
  /** The current entries of these pets; a pet that is not tracked is absent. */
  loadEntries(petIds: readonly bigint[], options?: EntryReadOptions): Promise<Map<bigint, Entry>>;
  /**
   * Appends the submissions in ONE transaction and one commit, each all-or-nothing on
   * its own: events get their seq and hash-chain link, and the projection is updated
   * with them. A submission whose expected version does not match fails with
   * VersionConflict; once a submission failed on a pet, later ones of the batch on that
   * pet fail too (they were decided against its result): with a VersionConflict when it
   * conflicted, else with its error. Rejects, leaving nothing,
   * when the batch as a whole could not be committed (the lock, the disk).
   */
  appendBatch(submissions: readonly Submission[], options?: BatchOptions): Promise<Outcome<Appended[]>[]>;

  /**
   * What became of a batch that rejected with CommitUnconfirmed, once the database can
   * tell: 'committed' when its last event is in the log with its hash; 'unknown' for a
   * batch that appended no event (only stored answers of refusals). On PostgreSQL it
   * first waits until the server process that received the COMMIT is gone, so that a
   * COMMIT still queued there cannot land after the look. Rejects while the database does
   * not answer (call again later).
   */
  commitOutcome(batch: UnconfirmedBatch): Promise<'committed' | 'not committed' | 'unknown'>;

  /** Changes whenever the projection may have changed, by this process or another. */
  changeToken(): Promise<string>;
  /** The projection by petId, a page at a time, from one snapshot. */
  inventoryRows(): AsyncIterable<InventoryRow[]>;
  /** The whole projection by petId. */
  entries(): Promise<Entry[]>;

  /** The newest event's seq, 0 for an empty log. */
  lastSeq(): Promise<number>;
  replayRows(range?: SeqRange): AsyncIterable<ReplayRow[]>;
  /** Every event with its hash-chain columns, by seq. */
  chainRows(): AsyncIterable<ChainRow[]>;
  /** The key log, the keys and the sequence counters, from one snapshot. */
  keyHistory(): Promise<KeyHistory>;
  /** The heads of the event log and of the key log, from one snapshot. */
  logHead(): Promise<LogHead>;
  /**
   * At most limit events with seq > after, by seq, with their chain columns: one page of
   * the change feed, read by one statement (no read transaction outlives it). A seq that
   * is visible implies that every smaller one is (seqs commit in order).
   */
  eventsAfter(after: bigint, limit: number): Promise<ChainRow[]>;
  /** Rows of stock_adjustments by seq. */
  stockAdjustments(filter: AuditFilter): AsyncIterable<AdjustmentRow[]>;

  /** Runs read against one snapshot of the log and the projection. */
  snapshot<T>(read: (view: LogView) => Promise<T>): Promise<T>;
  /**
   * Holding the write lock: applies the events after seq `after` to entries (the replay
   * of a snapshot), then replaces the projection with them (a shadow table swapped in,
   * so readers see the old one until the commit). Returns the caught-up count, the
   * projection as it was, and the entries written.
   */
  replaceProjection(
    entries: Map<bigint, Entry>,
    after: number,
  ): Promise<{ caughtUp: number; before: Entry[]; entries: Map<bigint, Entry> }>;

  keys: KeyStore;
  /** The stored answers of requests sent with an Idempotency-Key (written by appendBatch). */
  idempotency: IdempotencyStore;
  /** Every key with its hash, for copying a store; never shown to anyone. */
  keyRecords(): Promise<KeyRecord[]>;
  /**
   * Into an EMPTY store, in one transaction: the events verbatim (seq, times, actors,
   * hashes), the keys, the idempotency records, the chain head after the last event, and
   * the projection replayed from them. Rejects with StoreNotEmpty (naming what is there)
   * and writes nothing when the store holds any event, key, idempotency record or
   * projection row. Optional: an adapter that cannot
   * be a copy's target leaves it out.
   */
  importHistory?(history: HistoryImport): Promise<{ events: number; keys: number; entries: number; idempotency: number }>;

  /** Rejects when the database does not answer. */
  ping(): Promise<void>;
  /**
   * A real write that needs new space, undone: rejects while the database cannot take
   * writes. A store whose writer stopped starts a new one here (the health check calls
   * this at most once a second while writes fail).
   */
  probeWrite(): Promise<void>;
  /** Why the store knows it cannot take writes now (its writer stopped, its file is no
   * longer at its path), without trying; undefined when it can try. */
  unavailable(): string | undefined;
  /** The write-ahead log's state; undefined for a store without one (in memory). */
  storageStatus(): StorageStatus | undefined;
  /** The connection pool's state, for a store that keeps one. */
  poolStatus?(): PoolStatus;
  /**
   * What an error this store raised means for a client: contention (another writer held
   * the lock too long) or a storage fault (a full disk, a read-only or broken file), both
   * "not now" (503) rather than "broken" (500); undefined for anything else. Each adapter
   * knows its own driver's codes; nothing above the port does.
   */
  fault(error: unknown): StorageFault | undefined;
  close(): Promise<void>;
}

/** A connection pool's state (node-postgres's counts). */
export interface PoolStatus {
  /** Connections open, in use or idle. */
  total: number;
  idle: number;
  /** Queries waiting for a connection. */
  waiting: number;
}

export interface StorageFault {
  kind: 'contention' | 'storage';
  /** The driver's own code, for the log (SQLITE_FULL, …). */
  code: string;
}
