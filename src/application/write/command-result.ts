// What a command comes to. Every expected outcome is a value the caller switches on: the
// command was applied, a request sent with an Idempotency-Key had its answer stored
// already (replayed), or it was refused (with its answer stored when it had a key and the
// refusal depends on the entry). Exceptions are faults only: the database not answering
// in time, a bug.
import type { Entry } from '../../domain/apply-event.ts';
import type { Refusal } from '../../domain/refusals.ts';
import type { IdempotencyRecord, IdempotencyScope, StoredAnswer } from '../../store/idempotency.ts';

/** An entry as a command left it, with the Log-Receipt of its write when the store signs. */
export type Written = Entry & { receipt?: string };

/** The refusals whose answer is stored with a key: they depend on the entry's state, and a
 * retry after that state changed must still be told what the first request was told. */
export type StoredRefusal = Extract<Refusal, { reason: 'not_tracked' | 'precondition_failed' }>;

export function isStoredRefusal(refusal: CommandRefusal): refusal is StoredRefusal {
  return refusal.reason === 'not_tracked' || refusal.reason === 'precondition_failed';
}

/** Why a request with an Idempotency-Key is refused before its command is decided. */
type KeyRefusal =
  /** The key's answer was stored for another request (another fingerprint). */
  | { reason: 'idempotency_key_reused' }
  /** Another request with the key is being processed now. */
  | { reason: 'idempotency_key_in_flight' };

export type CommandRefusal = Refusal | KeyRefusal;

/** A refusal; `answer`: the answer stored with its key, given as stored. */
export interface Refused {
  kind: 'refused';
  refusal: CommandRefusal;
  answer?: StoredAnswer;
}

/** The key's answer was stored already, for the same request: it is given again. */
export interface Replayed {
  kind: 'replayed';
  record: IdempotencyRecord;
}

export type CommandResult = { kind: 'applied'; entry: Written } | Replayed | Refused;

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

/** What a key's stored record means for a request with that key: its own answer
 * (replayed) or another request's (refused as reused). */
export function replayOf(record: IdempotencyRecord, fingerprint: string | undefined): Replayed | Refused {
  if (record.fingerprint !== fingerprint) return { kind: 'refused', refusal: { reason: 'idempotency_key_reused' } };
  return { kind: 'replayed', record };
}
