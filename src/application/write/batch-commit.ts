// One batch of the group commit: its jobs decided together (batch-decision.ts) and
// appended as one port call, the events and the projection in one transaction; each job
// then has its own outcome (one job's refusal leaves the others untouched). A job the
// store finds stale under its lock is decided again there, by the plan's decideAgain,
// where the store can (PostgreSQL); elsewhere it fails with VersionConflict and the
// command handler's retry policy decides it again in a later batch.
import type { Appended, EventLog, Outcome, SubmissionRefusal } from '../../store/event-log.ts';
import { newCommitGate, type CommitGate } from '../../store/commit-gate.ts';
import { DeadlinePassed } from '../../store/health.ts';
import type { Job, JobResult } from './command-job.ts';
import { replayOf, type Written } from './command-result.ts';
import { decideBatch, type BatchPlan } from './batch-decision.ts';
import type { KnownEntries } from './known-entries.ts';

export interface BatchCommitDeps {
  store: Pick<EventLog, 'appendBatch'>;
  entries: KnownEntries;
  now: () => number;
  /** How long the answer of a request with an Idempotency-Key is kept. */
  idempotencyTtlMs: number;
  /** After a batch was appended: how many submissions, in how many seconds, and the
   * types of the events appended (the metrics count them). */
  onAppended?: ((submissions: number, seconds: number, eventTypes: string[]) => void) | undefined;
}

/** The commit function of the group commit: a batch of jobs in, an outcome per job out. */
export function makeBatchCommit({ store, entries, now, idempotencyTtlMs, onAppended }: BatchCommitDeps) {
  const commitJobs = async (jobs: Job[], gate: CommitGate): Promise<Outcome<JobResult>[]> => {
    const at = now();
    const times = { recordedAt: new Date(at).toISOString(), expiresAt: new Date(at + idempotencyTtlMs).toISOString() };
    const plan = await decideBatch(jobs, entries, times, Math.min(...jobs.map((job) => job.deadline)));
    if (plan.submissions.length > 0) await append(jobs, plan, gate);
    return plan.outcomes;
  };

  const append = async (jobs: Job[], plan: BatchPlan, gate: CommitGate) => {
    const { submissions, positions, outcomes, refusals, decideAgain } = plan;
    // Real time, not the injected clock: this bounds how long a client waits.
    let waitUntil = Infinity;
    for (const i of positions) waitUntil = Math.min(waitUntil, jobs[i]!.deadline);
    const started = performance.now();
    const appended = await store.appendBatch(submissions, { waitUntil, gate, decideAgain });
    const types: string[] = [];
    appended.forEach((outcome, k) => {
      const i = positions[k]!;
      // A refusal whose answer was stored is still a refusal, answered as stored (as
      // decided last, when the store decided the job again).
      const refusal = refusals.get(i);
      if (outcome.ok) outcomes[i] = { ok: true, value: refusal ?? { kind: 'applied', entries: writtenOf(outcome.value, types) } };
      else if ('refused' in outcome) outcomes[i] = refusedBy(outcome.refused, jobs[i]!, refusal);
      else outcomes[i] = outcome;
    });
    // A job decided again by the store met another writer's commit: what this process
    // remembers of other pets may be stale as well, and is read again.
    entries.committed(plan.overtaken || appended.some((outcome) => !outcome.ok));
    onAppended?.(submissions.length, (performance.now() - started) / 1000, types);
  };

  /** What a job whose submission the store refused comes to. */
  const refusedBy = (refused: SubmissionRefusal, job: Job, decidedAgain: JobResult | undefined): Outcome<JobResult> => {
    switch (refused.reason) {
      // Another request of the same batch, or another instance, stored the key's answer first.
      case 'key_taken':
        return { ok: true, value: replayOf(refused.record, job.idempotent?.fingerprint) };
      case 'key_in_flight':
        return { ok: true, value: { kind: 'refused', refusal: { reason: 'idempotency_key_in_flight' } } };
      case 'decided_again':
        // The plan keeps what its decideAgain came to; without it, this is a bug.
        return decidedAgain ? { ok: true, value: decidedAgain } : { ok: false, error: new Error('a job decided again left no refusal') };
      default:
        return refused satisfies never;
    }
  };

  /** The entries a submission left, remembered for the next batch; its event types counted. */
  const writtenOf = (appends: Appended[], types: string[]): Written[] =>
    appends.map((a) => {
      for (const e of a.events) types.push(e.type);
      entries.remember(a.entry);
      return a.receipt ? { ...a.entry, receipt: a.receipt } : a.entry;
    });

  // Jobs answered while they waited for this batch are left out: their clients were
  // told that nothing was written. (A job once sent is never abandoned: from then on its
  // batch's gate decides whether it may still commit.)
  return async (batch: Job[]): Promise<Outcome<JobResult>[]> => {
    const live = batch.filter((job) => !job.progress.abandoned);
    const gate = newCommitGate();
    for (const job of live) {
      job.progress.sent = true;
      job.progress.gate = gate;
    }
    const outcomes = live.length === 0 ? [] : await commitJobs(live, gate);
    if (live.length === batch.length) return outcomes;
    let k = 0;
    return batch.map((job) => (job.progress.abandoned ? { ok: false, error: new DeadlinePassed() } : outcomes[k++]!));
  };
}
