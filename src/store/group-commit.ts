// Group commit: the work submitted within one turn of the event loop shares one
// transaction, and so one sync to disk. Each item runs in its own savepoint, so one
// item's refusal (a 404, a 412) leaves the others in the batch untouched; the batch
// commits once; only then is each item answered with its own result. If the commit
// fails, every item of the batch fails with CommitFailed and nothing of it remains.
import type Database from 'better-sqlite3';

export class CommitFailed extends Error {
  constructor(cause: unknown) {
    super(`the batch could not be committed: ${(cause as Error)?.message ?? String(cause)}`, { cause });
    this.name = 'CommitFailed';
  }
}

export interface GroupCommitHooks {
  /** After a batch committed, before any of its items is answered. */
  onCommit?: (items: number) => void;
}

interface Pending<I, R> {
  item: I;
  resolve: (result: R) => void;
  reject: (error: unknown) => void;
}

type Outcome<R> = { ok: true; result: R } | { ok: false; error: unknown };

export function groupCommit<I, R>(db: Database.Database, run: (item: I) => R, hooks: GroupCommitHooks = {}): (item: I) => Promise<R> {
  // Nested inside the batch's transaction, better-sqlite3 runs this in a SAVEPOINT,
  // which it rolls back if run throws.
  const inSavepoint = db.transaction(run);
  const batchTransaction = db.transaction((batch: Pending<I, R>[]): Outcome<R>[] =>
    batch.map(({ item }) => {
      try {
        return { ok: true, result: inSavepoint(item) };
      } catch (error) {
        // Some errors (a full disk, an I/O error) make SQLite roll back the whole
        // transaction; the items before this one are gone too, and the ones after must
        // not run outside it.
        if (!db.inTransaction) throw error;
        return { ok: false, error };
      }
    }),
  );

  let queue: Pending<I, R>[] = [];
  const flush = () => {
    const batch = queue;
    queue = [];
    let outcomes: Outcome<R>[];
    try {
      // IMMEDIATE: take the write lock at BEGIN, so that another process's writer makes
      // us wait (busy_timeout) rather than fail halfway.
      outcomes = batchTransaction.immediate(batch);
    } catch (cause) {
      const failed = new CommitFailed(cause);
      for (const pending of batch) pending.reject(failed);
      return;
    }
    hooks.onCommit?.(batch.length);
    outcomes.forEach((outcome, i) => {
      const pending = batch[i]!;
      if (outcome.ok) pending.resolve(outcome.result);
      else pending.reject(outcome.error);
    });
  };

  return (item) =>
    new Promise<R>((resolve, reject) => {
      if (queue.length === 0) setImmediate(flush);
      queue.push({ item, resolve, reject });
    });
}
