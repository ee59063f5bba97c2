// The deadline watch: a caller is answered by its deadline (and a grace for a batch
// stuck past it) whatever the database does. One timer serves every waiting job, set for
// the earliest of their deadlines: a job settled before it costs nothing of its own.
import { CommitUnconfirmed } from '../store/event-log.ts';
import { DeadlinePassed } from '../store/health.ts';
import type { Job, JobResult } from './command-job.ts';
import type { UnconfirmedCommits } from './unconfirmed-commits.ts';

/** How long after its deadline a request whose batch has not settled is answered anyway:
 * the store ends its own waits at the deadline, so this is only for a batch stuck past
 * it (a server that stopped answering, a disk that stalls). */
const ANSWER_GRACE_MS = 500;

interface Waiting {
  resolve: (result: JobResult) => void;
  reject: (error: unknown) => void;
}

/** Sends jobs through `submit`, each answered by its deadline plus the grace. */
export function deadlineWatch(submit: (job: Job) => Promise<JobResult>, unconfirmed: UnconfirmedCommits) {
  // The callers still waiting; a job answered before its batch settled is marked instead.
  const waiting = new Map<Job, Waiting>();
  const answeredUnconfirmed = new WeakSet<Job>();
  let timer: NodeJS.Timeout | undefined;
  let timerAt = Infinity;

  const wakeAt = (at: number) => {
    if (timer) clearTimeout(timer);
    timerAt = at;
    timer = setTimeout(answerOverdue, Math.max(0, at - Date.now()));
    // The callers' own connections keep the process alive while they wait.
    timer.unref();
  };
  const answerOverdue = () => {
    timer = undefined;
    timerAt = Infinity;
    const at = Date.now();
    let next = Infinity;
    for (const job of waiting.keys()) {
      const due = job.deadline + ANSWER_GRACE_MS;
      if (due <= at) answerUnsettled(job);
      else if (due < next) next = due;
    }
    if (next < Infinity) wakeAt(next);
  };
  /** The caller of a waiting job, no longer waiting once taken. */
  const callerOf = (job: Job): Waiting | undefined => {
    const caller = waiting.get(job);
    waiting.delete(job);
    return caller;
  };
  /** What may be said by the deadline of a job whose batch has not settled. */
  const answerUnsettled = (job: Job) => {
    const caller = callerOf(job);
    const { progress } = job;
    if (!progress.committing) {
      // Not sent: dropped from the queue. Sent: the store sends no COMMIT after the
      // batch's deadline, which is this job's or earlier.
      if (!progress.sent) progress.abandoned = true;
      return caller?.reject(new DeadlinePassed());
    }
    answeredUnconfirmed.add(job);
    caller?.reject(new CommitUnconfirmed({}));
  };
  const settled = (job: Job, result: JobResult) => {
    const caller = callerOf(job);
    if (caller) caller.resolve(result);
    // A stored refusal appended no event: the write the client asked for did not happen.
    else if (answeredUnconfirmed.has(job)) unconfirmed.report(job, result.kind === 'applied' ? 'committed' : 'not committed');
  };
  const failed = (job: Job, error: unknown) => {
    const caller = callerOf(job);
    if (error instanceof CommitUnconfirmed) {
      answeredUnconfirmed.add(job);
      unconfirmed.lookUp(job, error);
    } else if (!caller && answeredUnconfirmed.has(job)) unconfirmed.report(job, 'not committed');
    caller?.reject(error);
  };

  return {
    /** The job's result, or by its deadline plus the grace what can be said then. */
    attempt: (job: Job) =>
      new Promise<JobResult>((resolve, reject) => {
        waiting.set(job, { resolve, reject });
        if (job.deadline + ANSWER_GRACE_MS < timerAt) wakeAt(job.deadline + ANSWER_GRACE_MS);
        submit(job).then(
          (result) => settled(job, result),
          (error: unknown) => failed(job, error),
        );
      }),
  };
}
