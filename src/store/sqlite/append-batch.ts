// The write side of the event log: a batch of submissions in one IMMEDIATE transaction,
// each in its own savepoint. A submission checks the version it was decided against,
// inserts its events (each chained to the one before by its hash) and applies them to
// the projection: the log and the projection never disagree.
import { encodeData } from '../../domain/codec.ts';
import type { RecordedEvent } from '../../domain/events.ts';
import type { Db } from '../database.ts';
import { eventHash, GENESIS_HASH, type Digest } from '../hash-chain.ts';
import { IdempotencyKeyTaken } from '../idempotency.ts';
import { CommitUnconfirmed, VersionConflict, type Appended, type BatchOptions, type Outcome, type Submission } from '../port.ts';
import { makeEntryReader } from './entry-reader.ts';
import type { IdempotencyWriter } from './idempotency-table.ts';
import type { ProjectionTable } from './projection-table.ts';

export interface EventWriter {
  appendBatch(submissions: readonly Submission[], options?: BatchOptions): Outcome<Appended[]>[];
}

/** beforeCommit runs inside the batch's transaction, last: throwing rolls all of it back. */
export function makeEventWriter(
  db: Db,
  projection: ProjectionTable,
  idempotency: IdempotencyWriter,
  beforeCommit: () => void = () => {},
): EventWriter {
  const insert = db.prepare(
    `INSERT INTO events (seq, pet_id, version, type, data, actor, request_id, recorded_at, prev_hash, hash)
     VALUES (@seq, @petId, @version, @type, @data, @actor, @requestId, @recordedAt, @prevHash, @hash)`,
  );
  // The chain's tip: the newest event's hash, and the highest seq ever handed out
  // (sqlite_sequence remembers it even if the newest rows are gone).
  const newest = db.prepare('SELECT hash FROM events ORDER BY seq DESC LIMIT 1').pluck();
  const highestSeq = db.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'events'").pluck();
  const currentEntry = makeEntryReader(db, projection);

  // The last event this batch wrote, and whether its transaction function is done (so
  // that what fails next is the COMMIT itself).
  let written: { seq: bigint; hash: string } | undefined;
  let committing = false;

  const readTip = (): Digest => ({
    seq: Number(highestSeq.get() ?? 0),
    hash: (newest.get() as string | undefined) ?? GENESIS_HASH,
  });

  const appendSubmission = ({ meta, recordedAt, appends, idempotency: answer }: Submission): Appended[] => {
    if (answer) {
      // Inside the batch's transaction: an earlier submission of this batch counts too.
      const taken = idempotency.find(answer.record, answer.record.createdAt);
      if (taken) throw new IdempotencyKeyTaken(taken);
      const { petId, version } = answer.decidedOn;
      const actual = currentEntry(petId)?.version ?? 0;
      if (appends.length === 0 && actual !== version) throw new VersionConflict(petId, version, actual);
      idempotency.put(answer.record);
    }
    const tip = readTip();
    return appends.map(({ petId, expectedVersion, events: decided }) => {
      let entry = currentEntry(petId);
      if ((entry?.version ?? 0) !== expectedVersion) throw new VersionConflict(petId, expectedVersion, entry?.version ?? 0);
      const events: RecordedEvent[] = [];
      for (const event of decided) {
        const row = {
          seq: tip.seq + 1,
          petId,
          version: (entry?.version ?? 0) + 1,
          type: event.type,
          data: encodeData(event),
          actor: meta.actor,
          requestId: meta.requestId,
          recordedAt,
          prevHash: tip.hash,
        };
        const hash = eventHash(row);
        insert.run({ ...row, hash });
        tip.seq = row.seq;
        tip.hash = hash;
        written = { seq: BigInt(row.seq), hash };
        const recorded: RecordedEvent = { ...event, ...meta, seq: row.seq, petId, version: row.version, recordedAt };
        entry = projection.apply(entry, recorded);
        events.push(recorded);
      }
      if (!entry) throw new Error(`append for pet ${petId} decided nothing`);
      return { entry, events };
    });
  };

  // Nested inside the batch's transaction, better-sqlite3 runs this in a SAVEPOINT,
  // which it rolls back if it throws.
  const inSavepoint = db.transaction(appendSubmission);
  const batch = db.transaction((submissions: readonly Submission[]): Outcome<Appended[]>[] => {
    // Pets on which a submission of this batch failed, and why: later submissions on
    // them were decided against its result, which never happened. They share its fate:
    // a conflict (decide again) or its fault (a full disk).
    const failedPets = new Map<bigint, unknown>();
    const outcomes = submissions.map((submission): Outcome<Appended[]> => {
      const stale = submission.appends.find((a) => failedPets.has(a.petId));
      if (stale) {
        const cause = failedPets.get(stale.petId);
        return {
          ok: false,
          error: cause instanceof VersionConflict ? new VersionConflict(stale.petId, stale.expectedVersion, undefined) : cause,
        };
      }
      try {
        return { ok: true, value: inSavepoint(submission) };
      } catch (error) {
        // Some errors (a full disk, an I/O error) make SQLite roll back the whole
        // transaction; the submissions before this one are gone too, and the ones after
        // must not run outside it.
        if (!db.inTransaction) throw error;
        // A key used already wrote nothing: the later submissions on its pets were
        // decided against a result that did not happen, and are decided again.
        const cause = error instanceof IdempotencyKeyTaken ? new VersionConflict(0n, 0, undefined) : error;
        for (const a of submission.appends) failedPets.set(a.petId, cause);
        return { ok: false, error };
      }
    });
    beforeCommit();
    committing = true;
    return outcomes;
  });

  /**
   * The batch in its transaction. A COMMIT that fails with an I/O error (the sync of the
   * log failed) leaves the outcome unknown: the frames may be in the log file, and a
   * later recovery may find them whole. That is CommitUnconfirmed, never "nothing
   * written"; any other failure of COMMIT (SQLITE_BUSY, a full disk) rolls back.
   */
  const run = (submissions: readonly Submission[]): Outcome<Appended[]>[] => {
    written = undefined;
    committing = false;
    try {
      return batch.immediate(submissions);
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (committing && typeof code === 'string' && code.startsWith('SQLITE_IOERR')) {
        throw new CommitUnconfirmed(written ?? {}, { cause: error });
      }
      throw error;
    }
  };

  const busyTimeout = db.pragma('busy_timeout', { simple: true }) as number;
  return {
    // IMMEDIATE: take the write lock at BEGIN, so that another process's writer makes
    // us wait (busy_timeout) rather than fail halfway. The wait ends at the batch's
    // deadline: a request that already waited behind an earlier batch does not wait
    // the full time again.
    appendBatch(submissions, options = {}) {
      if (options.waitUntil === undefined) return run(submissions);
      const waitMs = Math.max(0, Math.min(busyTimeout, Math.floor(options.waitUntil - Date.now())));
      db.pragma(`busy_timeout = ${waitMs}`);
      try {
        return run(submissions);
      } finally {
        db.pragma(`busy_timeout = ${busyTimeout}`);
      }
    },
  };
}
