// The event log's role of the storage port: appending batches of decided events
// (emmett's appendToStream: the caller decides against the entry it loaded and appends
// with the version it expects; the store checks that version inside its transaction and
// reports a VersionConflict when another writer came first) and reading the log back in
// ranges: replays, the hash chain, the change feed.
import type { DomainEvent, EventMeta, RecordedEvent } from '../domain/events.ts';
import type { CommitGate } from './commit-gate.ts';
import type { IdempotencyRecord, RecordRequest } from './idempotency.ts';
import type { Entry } from './projection.ts';

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
   * already used leaves the submission out (refused as key_taken), nothing written. A
   * submission may record an answer and append nothing (a 404 or 412). */
  idempotency?: RecordRequest;
}

export interface Appended {
  entry: Entry;
  events: RecordedEvent[];
  /** The Log-Receipt of the submission's last event, on its last append, when the store signs. */
  receipt?: string;
  /** The signed checkpoint that receipt carries (the batch's tree). */
  checkpoint?: string;
}

/** What a submission is decided again into: a submission to plan in its place, or a
 * refusal, which the caller keeps (the submission's outcome is then decided_again). */
export type DecidedAgain = Submission | { refused: true };

/**
 * Decides the batch's submission at `index` again, against the entries of its pets as the
 * batch holds them under its lock (`entry(petId)`: undefined when the pet is not
 * tracked), after the version it was decided against turned out stale. Synchronous and
 * pure but for keeping its own record of the new decision: the store may plan a batch
 * more than once (one submission at a time after a failed write), and the decision it
 * made last is the one written.
 */
export type DecideAgain = (index: number, entry: (petId: bigint) => Entry | undefined) => DecidedAgain;

export interface BatchOptions {
  /** Wall-clock time (Date.now) after which the batch stops waiting for the write lock
   * and rejects with a contention error (fault() says so), nothing of it written. On
   * PostgreSQL every round trip of the batch is bounded by it, and no COMMIT is sent
   * after it. */
  waitUntil?: number;
  /** Entered by the store just before its COMMIT (on SQLite in the writer thread): a
   * batch given up before that rolls back instead, and once it is entered a client
   * answered without the batch's result cannot be told that nothing was written. */
  gate?: CommitGate;
  /** Given, a submission whose expected version is stale is decided again by it, in the
   * batch's transaction, instead of failing with VersionConflict. Stores that cannot call
   * back into the caller while they hold the lock (SQLite's writer thread) ignore it. */
  decideAgain?: DecideAgain;
}

export type Outcome<R> = { ok: true; value: R } | { ok: false; error: unknown };

/** Why the store left a submission out, in the ordinary course of things (not a fault):
 * nothing of it was written. */
export type SubmissionRefusal =
  /** The key's answer was stored already (by an earlier submission, or another instance). */
  | { reason: 'key_taken'; record: IdempotencyRecord }
  /** Another batch (of another instance) holds the key and has not stored its answer yet. */
  | { reason: 'key_in_flight' }
  /** The caller's decideAgain refused it: the caller knows why. */
  | { reason: 'decided_again' };

/** What became of one submission: appended, refused, or failed (a VersionConflict, or a
 * fault of its own, such as a broken constraint). */
export type SubmissionOutcome = { ok: true; value: Appended[] } | { ok: false; error: unknown } | { ok: false; refused: SubmissionRefusal };

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

export interface SeqRange {
  after?: number;
  upTo?: number;
}

export interface EventLog {
  /**
   * Appends the submissions in ONE transaction and one commit, each all-or-nothing on
   * its own: events get their seq and hash-chain link, and the projection is updated
   * with them. A submission whose expected version does not match fails with
   * VersionConflict; once a submission failed on a pet, later ones of the batch on that
   * pet fail too (they were decided against its result): with a VersionConflict when it
   * conflicted, else with its error. With options.decideAgain (where the store supports
   * it), a submission that would fail with VersionConflict is decided again instead, and
   * what that gives is planned in its place. Rejects, leaving nothing,
   * when the batch as a whole could not be committed (the lock, the disk).
   */
  appendBatch(submissions: readonly Submission[], options?: BatchOptions): Promise<SubmissionOutcome[]>;
  /**
   * What became of a batch that rejected with CommitUnconfirmed, once the database can
   * tell: 'committed' when its last event is in the log with its hash; 'unknown' for a
   * batch that appended no event (only stored answers of refusals). On PostgreSQL it
   * first waits until the server process that received the COMMIT is gone, so that a
   * COMMIT still queued there cannot land after the look. Rejects while the database does
   * not answer (call again later).
   */
  commitOutcome(batch: UnconfirmedBatch): Promise<'committed' | 'not committed' | 'unknown'>;
  replayRows(range?: SeqRange): AsyncIterable<ReplayRow[]>;
  /** Every event with its hash-chain columns, by seq. */
  chainRows(): AsyncIterable<ChainRow[]>;
  /**
   * At most limit events with seq > after, by seq, with their chain columns: one page of
   * the change feed, read by one statement (no read transaction outlives it). A seq that
   * is visible implies that every smaller one is (seqs commit in order).
   */
  eventsAfter(after: bigint, limit: number): Promise<ChainRow[]>;
}
