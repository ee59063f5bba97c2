// The requests answered commit_unconfirmed: what their batch did is reported once the
// database can tell, looked up again while it does not answer, and given up as unknown
// after a while.
import type { CommitUnconfirmed, EventLog } from '../../store/event-log.ts';
import type { Job } from './command-job.ts';

/** What became of a batch whose requests were answered CommitUnconfirmed, once known. */
export interface CommitOutcomeReport {
  requestIds: string[];
  outcome: 'committed' | 'not committed' | 'unknown';
}

/** How often the outcome of an unconfirmed commit is looked up while the database does not answer. */
const OUTCOME_RETRY_MS = 1_000;
/** For how long it is looked up before it is logged as unknown. */
const OUTCOME_GIVE_UP_MS = 10 * 60_000;

export interface UnconfirmedCommits {
  /** The job's batch is known to have done this. */
  report(job: Job, outcome: CommitOutcomeReport['outcome']): void;
  /** The job's batch could not be confirmed: its outcome is looked up in the store. */
  lookUp(job: Job, unconfirmed: CommitUnconfirmed): void;
}

export function unconfirmedCommits(
  store: Pick<EventLog, 'commitOutcome'>,
  onCommitOutcome: ((report: CommitOutcomeReport) => void) | undefined,
): UnconfirmedCommits {
  const report = (job: Job, outcome: CommitOutcomeReport['outcome']) => onCommitOutcome?.({ requestIds: [job.meta.requestId], outcome });
  const lookUp = (job: Job, unconfirmed: CommitUnconfirmed, since: number) => {
    store.commitOutcome(unconfirmed.batch).then(
      (outcome) => report(job, outcome),
      () => {
        if (Date.now() - since > OUTCOME_GIVE_UP_MS) return report(job, 'unknown');
        setTimeout(() => lookUp(job, unconfirmed, since), OUTCOME_RETRY_MS).unref();
      },
    );
  };
  return { report, lookUp: (job, unconfirmed) => lookUp(job, unconfirmed, Date.now()) };
}
