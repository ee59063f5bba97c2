// What a batch's receipts are made of and how they are signed: the events to sign, the
// checkpoint they share, and the ticket that puts them in place once signed.
import type { Appended } from '../event-log.ts';
import type { IdempotencyRecord } from '../idempotency.ts';

/** An event a batch planned, and where its receipt goes once it is signed. */
export interface PendingReceipt {
  seq: bigint;
  hash: string;
  /** Its inclusion path in the batch's tree (the planner adds it). */
  proof?: Buffer[];
  /** The submission's last append, which carries the receipt to the answer. */
  appended: Appended;
  /** The 200's idempotency record, stored with the receipt for its replays. */
  record?: IdempotencyRecord;
}

/** What a batch signs: one checkpoint of its tree, which every receipt of it carries. */
export interface BatchToSign {
  receipts: readonly PendingReceipt[];
  /** The tree after the batch (root undefined: it appends nothing, and signs nothing). */
  tree: { size: number; root?: Buffer };
  /** The key log's head, which the checkpoint names. */
  keys: { seq: number; hash: string };
}

export interface ReceiptSigning {
  /** Starts signing; the ticket puts the receipts in place. */
  start(batch: BatchToSign): Ticket;
  /** Signs on the calling thread (a batch redone one submission at a time). */
  inPlace(batch: BatchToSign): void;
  close(): Promise<void>;
}

export interface Ticket {
  /** Blocks until the receipts are signed and puts them in place (a worker thread only). */
  placeReceiptsSync(): void;
  /** The same, without blocking the event loop. */
  placeReceipts(): Promise<void>;
}
