// Whether a batch may still commit, decided once between the store, about to COMMIT, and
// whoever answers the batch's clients when it is late: whichever comes first wins. The
// cell is shared memory, so the SQLite writer thread decides on the same cell as the event
// loop, atomically: a batch answered as not written never commits afterwards, and one
// that began its COMMIT is never answered as not written.
const OPEN = 0;
const COMMITTING = 1;
const GIVEN_UP = 2;

/** One batch's gate; it crosses to a worker thread as it is (its memory is shared). */
export type CommitGate = Int32Array;

export function newCommitGate(): CommitGate {
  return new Int32Array(new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT));
}

/** The store, just before COMMIT: true if it may commit; false if the batch was given up
 * (then it rolls back). */
export function enterCommit(gate: CommitGate): boolean {
  return Atomics.compareExchange(gate, 0, OPEN, COMMITTING) !== GIVEN_UP;
}

/** The answering side: true if the batch will never commit (given up before its COMMIT);
 * false if its COMMIT may have been sent. */
export function giveUpCommit(gate: CommitGate): boolean {
  return Atomics.compareExchange(gate, 0, OPEN, GIVEN_UP) !== COMMITTING;
}
