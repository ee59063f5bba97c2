// Group commit, for any adapter: the work submitted within one turn of the event loop
// goes to the store as one batch (one transaction, one sync to disk), and the work that
// arrives while a batch is being committed waits for the next one. The commit function
// answers each item on its own (one item's 404 or 412 leaves the others untouched);
// only after it returned, that is after the commit, is any item answered. If the batch
// as a whole fails, every item of it fails with CommitFailed and nothing of it remains.
import { CommitUnconfirmed, type Outcome } from '../../store/event-log.ts';

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

export function groupCommit<I, R>(commit: (items: I[]) => Promise<Outcome<R>[]>, hooks: GroupCommitHooks = {}): (item: I) => Promise<R> {
  let queue: Pending<I, R>[] = [];
  let scheduled = false;
  let committing = false;

  const schedule = () => {
    if (scheduled || committing || queue.length === 0) return;
    scheduled = true;
    // flush settles every pending item itself, a failed commit included.
    setImmediate(() => void flush());
  };

  const flush = async () => {
    scheduled = false;
    const batch = queue;
    queue = [];
    committing = true;
    let outcomes: Outcome<R>[];
    try {
      outcomes = await commit(batch.map((p) => p.item));
    } catch (cause) {
      committing = false;
      schedule();
      // A commit whose result is unknown is not a failure: its items may be applied.
      const failed = cause instanceof CommitUnconfirmed ? cause : new CommitFailed(cause);
      for (const pending of batch) pending.reject(failed);
      return;
    }
    committing = false;
    // The next batch goes to the store before this one's items are answered, so that
    // the store writes it while this thread answers them.
    if (queue.length > 0) void flush();
    hooks.onCommit?.(batch.length);
    outcomes.forEach((outcome, i) => {
      const pending = batch[i]!;
      if (outcome.ok) pending.resolve(outcome.value);
      else pending.reject(outcome.error);
    });
  };

  return (item) =>
    new Promise<R>((resolve, reject) => {
      queue.push({ item, resolve, reject });
      schedule();
    });
}
