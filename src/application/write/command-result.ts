// What a command comes to. Outcomes are values the caller switches on: the command was
// applied, a request sent with an Idempotency-Key had its answer stored already (replayed),
// or its refusal was stored with the key (refused). Failures stay exceptions: a refusal
// without a key, a key used for another request, the database not answering in time.
import type { Entry } from '../../domain/apply-event.ts';
import { PetNotTracked, PreconditionFailed } from '../../domain/errors.ts';
import type { IdempotencyRecord, IdempotencyScope, StoredAnswer } from '../../store/idempotency.ts';

/** An entry as a command left it, with the Log-Receipt of its write when the store signs. */
export type Written = Entry & { receipt?: string };

/** The refusals whose answer is stored with a key: they depend on the entry's state, and a
 * retry after that state changed must still be told what the first request was told. */
export type StoredRefusal = PetNotTracked | PreconditionFailed;

export function isStoredRefusal(error: unknown): error is StoredRefusal {
  return error instanceof PetNotTracked || error instanceof PreconditionFailed;
}

/** A refusal whose answer was stored with its key: it is answered as stored. */
export interface Refused {
  kind: 'refused';
  refusal: StoredRefusal;
  answer: StoredAnswer;
}

export type CommandResult =
  | { kind: 'applied'; entry: Written }
  /** The key's answer was stored already, for the same request: it is given again. */
  | { kind: 'replayed'; record: IdempotencyRecord }
  | Refused;

/**
 * A command sent with an Idempotency-Key: its answer is stored with its event (or alone,
 * for a StoredRefusal), and a key used already is not carried out again. The answers are
 * rendered by the caller, who knows what its clients are shown.
 */
export interface Idempotent {
  scope: IdempotencyScope;
  /** The request's path, stored with its answer. */
  path: string;
  fingerprint: string;
  answers: {
    applied(entry: Entry): StoredAnswer;
    refused(refusal: StoredRefusal): StoredAnswer;
  };
}

/** The key's answer was stored for another request (another fingerprint). */
export class IdempotencyKeyReused extends Error {
  override name = 'IdempotencyKeyReused';
  constructor() {
    super('the idempotency key was used for another request');
  }
}

/** What a key's stored record means for a request with that key: its own answer
 * (replayed) or another request's (refused as reused). */
export function replayOf(record: IdempotencyRecord, fingerprint: string | undefined): CommandResult {
  if (record.fingerprint !== fingerprint) throw new IdempotencyKeyReused();
  return { kind: 'replayed', record };
}
