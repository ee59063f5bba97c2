// The deadline watch: a caller is answered by its deadline (and a grace for a batch
// stuck past it) whatever the database does. One timer serves every waiting job, set for
// the earliest of their deadlines: a job settled before it costs nothing of its own.
import { CommitUnconfirmed } from '../../store/event-log.ts';
import { giveUpCommit } from '../../store/commit-gate.ts';
import { DeadlinePassed } from '../../store/health.ts';
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

/** The callers still waiting, and the jobs answered before their batch settled. */
interface Watched {
  waiting: Map<Job, Waiting>;
  answeredUnconfirmed: WeakSet<Job>;
  unconfirmed: UnconfirmedCommits;
}

/**
 * One timer for every waiting job, set for the earliest time one is due: `answerDue`
 * answers the jobs due at a time and says when the next one is (Infinity: none). Returns
 * what asks to be woken by a time.
 */
function dueTimer(answerDue: (now: number) => number): (at: number) => void {
  let timer: NodeJS.Timeout | undefined;
  let timerAt = Infinity;
  const wakeAt = (at: number) => {
    if (timer) clearTimeout(timer);
    timerAt = at;
    timer = setTimeout(
      () => {
        timer = undefined;
        timerAt = Infinity;
        const next = answerDue(Date.now());
        if (next < Infinity) wakeAt(next);
      },
      Math.max(0, at - Date.now()),
    );
    // The callers' own connections keep the process alive while they wait.
    timer.unref();
  };
  return (at) => {
    if (at < timerAt) wakeAt(at);
  };
}

/** The caller of a waiting job, no longer waiting once found. */
function callerOf(watched: Watched, job: Job): Waiting | undefined {
  const caller = watched.waiting.get(job);
  watched.waiting.delete(job);
  return caller;
}

/** Answers the jobs overdue at `at`; when the next one is due (Infinity: none). */
function answerOverdue(watched: Watched, at: number): number {
  let next = Infinity;
  for (const job of watched.waiting.keys()) {
    const due = job.deadline + ANSWER_GRACE_MS;
    if (due <= at) answerUnsettled(watched, job);
    else if (due < next) next = due;
  }
  return next;
}

/** What may be said by the deadline of a job whose batch has not settled. */
function answerUnsettled(watched: Watched, job: Job): void {
  const caller = callerOf(watched, job);
  const { progress } = job;
  // Not sent: dropped from the queue. Sent: its batch given up, the store rolls it back
  // instead of committing; if its COMMIT began first, the write may have happened.
  if (progress.gate === undefined || giveUpCommit(progress.gate)) {
    if (!progress.sent) progress.abandoned = true;
    return caller?.reject(new DeadlinePassed());
  }
  watched.answeredUnconfirmed.add(job);
  caller?.reject(new CommitUnconfirmed({}));
}

function settled(watched: Watched, job: Job, result: JobResult): void {
  const caller = callerOf(watched, job);
  if (caller) caller.resolve(result);
  // A stored refusal appended no event: the write the client asked for did not happen.
  else if (watched.answeredUnconfirmed.has(job)) {
    watched.unconfirmed.report(job, result.kind === 'applied' ? 'committed' : 'not committed');
  }
}

function failed(watched: Watched, job: Job, error: unknown): void {
  const caller = callerOf(watched, job);
  if (error instanceof CommitUnconfirmed) {
    watched.answeredUnconfirmed.add(job);
    watched.unconfirmed.lookUp(job, error);
  } else if (!caller && watched.answeredUnconfirmed.has(job)) watched.unconfirmed.report(job, 'not committed');
  caller?.reject(error);
}

/** Sends jobs through `submit`, each answered by its deadline plus the grace. */
export function deadlineWatch(submit: (job: Job) => Promise<JobResult>, unconfirmed: UnconfirmedCommits) {
  const watched: Watched = { waiting: new Map(), answeredUnconfirmed: new WeakSet(), unconfirmed };
  const wakeBy = dueTimer((at) => answerOverdue(watched, at));
  return {
    /** The job's result, or by its deadline plus the grace what can be said then. */
    attempt: (job: Job) =>
      new Promise<JobResult>((resolve, reject) => {
        watched.waiting.set(job, { resolve, reject });
        wakeBy(job.deadline + ANSWER_GRACE_MS);
        submit(job).then(
          (result) => settled(watched, job, result),
          (error: unknown) => failed(watched, job, error),
        );
      }),
  };
}
