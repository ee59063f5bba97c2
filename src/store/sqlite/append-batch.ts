// The write side of the event log: a batch of submissions in one IMMEDIATE transaction.
// The chain's tip is read once, the entries of the batch's pets and the records of its
// keys once each; the batch planner (batch-plan.ts) decides the submissions and builds
// the rows and hashes, as it does for PostgreSQL; this file only runs the SQL. Should
// the writes fail halfway (a constraint, a full disk), the transaction is rolled back
// and the batch redone in a new one, one submission at a time, each in a savepoint, so
// that exactly the ones that fail fail. The whole batch is not written in a savepoint
// of its own: a savepoint copies every page the batch changes into a sub-journal,
// which costs more than the rare redo.
import type { Statement } from 'better-sqlite3';
import type { Db } from './database.ts';
import { batchPets, batchScopes, nodeId, oneAtATime, planBatch, writesAnything, type BatchPlan, type PlanState } from '../batch-plan.ts';
import { GENESIS_HASH } from '../hash-chain.ts';
import { scopeId, type IdempotencyRecord } from '../idempotency.ts';
import { CommitUnconfirmed, type Appended, type BatchOptions, type Outcome, type Submission } from '../event-log.ts';
import type { Entry } from '../projection.ts';
import { makeEntryReader } from './entries.ts';
import type { IdempotencyWriter } from './idempotency.ts';
import type { ProjectionTable } from './projection.ts';
import type { BatchToSign, ReceiptSigning, Ticket } from '../receipts.ts';
import { frontierNodes } from '../../support/merkle.ts';

/** A batch's writes failed halfway: its transaction is rolled back and the batch redone one submission at a time. */
class RedoOneByOne extends Error {
  override name = 'RedoOneByOne';
  constructor(cause: unknown) {
    super('a write of the batch failed: redone one submission at a time', { cause });
  }
}

/** The step in which a batch's wait for the write lock is set (appendBatch). */
const WAIT_STEP_MS = 50;

interface EventWriter {
  appendBatch(submissions: readonly Submission[], options?: BatchOptions): Outcome<Appended[]>[];
}

/** beforeCommit runs inside the batch's transaction, last: throwing rolls all of it back.
 * signing: how the batch's writes are signed, once the store has a signing key. A batch's
 * receipts are signed (receipts.ts) while its rows are written and its COMMIT syncs; its
 * idempotency records wait for them, and its answers leave only after the COMMIT. */
export function makeEventWriter(
  db: Db,
  projection: ProjectionTable,
  idempotency: IdempotencyWriter,
  beforeCommit: () => void = () => {},
  signing: () => ReceiptSigning | undefined = () => undefined,
): EventWriter {
  const insert = db.prepare(
    `INSERT INTO events (seq, pet_id, version, type, data, actor, request_id, recorded_at, prev_hash, hash)
     VALUES (@seq, @petId, @version, @type, @data, @actor, @requestId, @recordedAt, @prevHash, @hash)`,
  );
  // The chain's tip: the newest event's hash, and the highest seq ever handed out
  // (sqlite_sequence remembers it even if the newest rows are gone).
  const newest = db.prepare('SELECT hash FROM events ORDER BY seq DESC LIMIT 1').pluck();
  const highestSeq = db.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'events'").pluck().safeIntegers(true);
  const currentEntry = makeEntryReader(db, projection);
  const insertNode = db.prepare('INSERT INTO tree_nodes (level, idx, hash) VALUES (?, ?, ?)');
  const storedNode = db.prepare('SELECT hash FROM tree_nodes WHERE level = ? AND idx = ?').pluck();
  const keysHead = db.prepare('SELECT seq, hash FROM api_key_events ORDER BY seq DESC LIMIT 1');
  /** The tree's frontier for a log of size events: a handful of reads by key. */
  const frontierOf = (size: number) => {
    const frontier = new Map<string, Buffer>();
    for (const { level, index } of frontierNodes(size)) {
      const hash = storedNode.get(level, index) as Buffer | undefined;
      if (hash) frontier.set(nodeId(level, index), hash);
    }
    return frontier;
  };
  const toSign = (plan: BatchPlan): BatchToSign => ({
    receipts: plan.receipts,
    tree: plan.tree,
    keys: (keysHead.get() as { seq: number; hash: string } | undefined) ?? { seq: 0, hash: GENESIS_HASH },
  });

  // The last event this batch wrote, and whether its transaction function is done (so
  // that what fails next is the COMMIT itself).
  let written: { seq: bigint; hash: string } | undefined;
  let committing = false;

  const write = (plan: BatchPlan, ticket?: Ticket): void => {
    for (const event of plan.events) insert.run(event);
    for (const node of plan.tree.nodes) insertNode.run(node.level, node.index, node.hash);
    for (const entry of plan.entries) projection.put(entry);
    // A stored 200 carries its receipt: the records wait for the signatures.
    if (plan.records.length > 0) ticket?.takeSync();
    for (const record of plan.records) idempotency.put(record);
    if (plan.events.length > 0) written = { seq: plan.next.seq, hash: plan.next.hash };
  };
  // Nested inside the batch's transaction, better-sqlite3 runs this in a SAVEPOINT,
  // which it rolls back if it throws.
  const inSavepoint = db.transaction(write);

  const batch = db.transaction(
    (submissions: readonly Submission[], each: boolean): { outcomes: Outcome<Appended[]>[]; ticket?: Ticket } => {
      const entries = new Map<bigint, Entry>();
      for (const petId of batchPets(submissions)) {
        const entry = currentEntry(petId);
        if (entry) entries.set(petId, entry);
      }
      const records = new Map<string, IdempotencyRecord>();
      for (const scope of batchScopes(submissions)) {
        const record = idempotency.stored(scope);
        if (record) records.set(scopeId(record), record);
      }
      const signs = signing();
      const seq = (highestSeq.get() as bigint | undefined) ?? 0n;
      const start: PlanState = {
        seq,
        hash: (newest.get() as string | undefined) ?? GENESIS_HASH,
        entries,
        records,
        frontier: frontierOf(Number(seq)),
        ...(signs ? { signs: true } : {}),
      };
      const done = each ? { outcomes: oneByOne(submissions, start, signs) } : wholeBatch(submissions, start, signs);
      beforeCommit();
      committing = true;
      return done;
    },
  );

  /** The batch's writes at once; a write that fails halfway asks for the batch again, one submission at a time. */
  const wholeBatch = (submissions: readonly Submission[], start: PlanState, signs: ReceiptSigning | undefined) => {
    const whole = planBatch(submissions, start);
    let ticket: Ticket | undefined;
    if (writesAnything(whole)) {
      ticket = signs?.start(toSign(whole));
      try {
        write(whole, ticket);
      } catch (error) {
        // Some errors (a full disk, an I/O error) make SQLite roll back the whole
        // transaction: nothing of the batch is left to save. Otherwise this rolls it back.
        if (!db.inTransaction) throw error;
        throw new RedoOneByOne(error);
      }
    }
    return { outcomes: whole.outcomes, ...(ticket ? { ticket } : {}) };
  };

  const oneByOne = (submissions: readonly Submission[], start: PlanState, signs: ReceiptSigning | undefined): Outcome<Appended[]>[] => {
    written = undefined;
    const steps = oneAtATime(submissions, start);
    for (let step = steps.next(); ;) {
      if (step.done) return step.value;
      let failed: { error: unknown } | undefined;
      // Rare (a batch's write failed): signed here, before its rows are written.
      signs?.inPlace(toSign(step.value));
      try {
        inSavepoint(step.value);
      } catch (error) {
        if (!db.inTransaction) throw error;
        failed = { error };
      }
      step = steps.next(failed);
    }
  };

  /**
   * The batch in its transaction. A COMMIT that fails with an I/O error (the sync of the
   * log failed) leaves the outcome unknown: the frames may be in the log file, and a
   * later recovery may find them whole. That is CommitUnconfirmed, never "nothing
   * written"; any other failure of COMMIT (SQLITE_BUSY, a full disk) rolls back.
   */
  const attempt = (submissions: readonly Submission[], each: boolean): ReturnType<typeof batch> => {
    written = undefined;
    committing = false;
    try {
      return batch.immediate(submissions, each);
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (committing && typeof code === 'string' && code.startsWith('SQLITE_IOERR')) {
        throw new CommitUnconfirmed(written ?? {}, { cause: error });
      }
      throw error;
    }
  };
  const run = (submissions: readonly Submission[]): Outcome<Appended[]>[] => {
    let done: ReturnType<typeof batch>;
    try {
      done = attempt(submissions, false);
    } catch (error) {
      if (!(error instanceof RedoOneByOne)) throw error;
      done = attempt(submissions, true);
    }
    // Committed: the receipts, signed meanwhile, go with the answers.
    done.ticket?.takeSync();
    return done.outcomes;
  };

  const busyTimeout = db.pragma('busy_timeout', { simple: true }) as number;
  // A PRAGMA cannot take a parameter: its statements are prepared once for each wait,
  // in steps of WAIT_STEP_MS rounded down (a batch gives up at most one step early),
  // not prepared again for each batch.
  const waits = new Map<number, Statement>();
  const waitFor = (ms: number) => {
    let set = waits.get(ms);
    if (!set) waits.set(ms, (set = db.prepare(`PRAGMA busy_timeout = ${ms}`)));
    set.run();
  };
  return {
    // IMMEDIATE: take the write lock at BEGIN, so that another process's writer makes
    // us wait (busy_timeout) rather than fail halfway. The wait ends at the batch's
    // deadline: a request that already waited behind an earlier batch does not wait
    // the full time again.
    appendBatch(submissions, options = {}) {
      if (options.waitUntil === undefined) return run(submissions);
      const waitMs = Math.max(0, Math.min(busyTimeout, Math.floor(options.waitUntil - Date.now())));
      waitFor(waitMs - (waitMs % WAIT_STEP_MS));
      try {
        return run(submissions);
      } finally {
        waitFor(busyTimeout);
      }
    },
  };
}
