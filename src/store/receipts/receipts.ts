// The receipts of a batch, signed on a thread of their own while the thread that writes
// goes on writing and waits for its commit: an Ed25519 signature is tens of
// microseconds of CPU per event, and the writer (SQLite's writer thread, PostgreSQL's
// event loop) would otherwise spend them inside the transaction, holding the write lock.
// A batch's receipts are started once the batch is planned (each event's seq and hash
// are known then) and taken once they are needed: before its idempotency records are
// written (a stored 200 replays its receipt), or after its commit. Nothing is handed out
// before the commit: the receipts of a batch that fails are dropped unread.
//
// Ed25519 is deterministic: the same key over the same message gives the same signature,
// so a receipt signed in place (the signing thread gone, or a batch redone one
// submission at a time) is byte for byte the one the thread would have made.
//
// The checkpoint and the receipts put in place are receipt-notes.ts's; the thread and
// the two ways of waiting for it, receipt-thread.ts's.
import type { SigningKeyData } from '../../support/signing.ts';
import { makeReceiptNotes } from './receipt-notes.ts';
import { signOnThread } from './receipt-thread.ts';
import type { ReceiptSigning } from './receipt-types.ts';

export type { BatchToSign, PendingReceipt, ReceiptSigning, Ticket } from './receipt-types.ts';

/**
 * Receipts signed with key for the log logId. 'thread-sync': on a thread, waited for by
 * blocking (a worker thread that writes, as SQLite's writer does); 'thread-async': on a
 * thread, waited for as a promise (an event loop); 'in-place': on the calling thread.
 */
export function makeReceiptSigning(key: SigningKeyData, logId: string, mode: 'thread-sync' | 'thread-async' | 'in-place'): ReceiptSigning {
  const notes = makeReceiptNotes(key, logId);
  if (mode === 'in-place') return { start: notes.signedWhenTaken, inPlace: notes.signHere, close: async () => {} };
  return signOnThread(key, notes, mode);
}
