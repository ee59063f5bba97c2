// One submission to the group commit as the command handler's modules share it: the
// commands, the caller's deadline, and how far the batch carrying it has gone.
import type { Command } from '../../domain/decide.ts';
import type { EventMeta } from '../../domain/events.ts';
import type { CommitGate } from '../../store/commit-gate.ts';
import type { Idempotent, Refused, Replayed, Written } from './command-result.ts';

/** Where a job is: a request answered before its batch settled is told what that allows. */
interface Progress {
  /** In a batch under way. */
  sent: boolean;
  /** Its batch's gate, once sent: whether that batch may still commit. */
  gate?: CommitGate;
  /** Answered already without being sent: it must never be. */
  abandoned: boolean;
}

export interface Job {
  commands: Command[];
  meta: EventMeta;
  /** Only for a single command. */
  idempotent?: Idempotent;
  /** Date.now() by which the command is answered, whatever the lock does. */
  deadline: number;
  progress: Progress;
}

/** What a batch made of a job: its entries written, its refusal (its answer stored, with a
 * key), or the answer stored already with its key. */
export type JobResult = { kind: 'applied'; entries: Written[] } | Refused | Replayed;

export function newJob(commands: Command[], meta: EventMeta, deadline: number, idempotent: Idempotent | undefined): Job {
  const job: Job = { commands, meta, deadline, progress: { sent: false, abandoned: false } };
  if (idempotent) job.idempotent = idempotent;
  return job;
}
