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
import { MessageChannel, receiveMessageOnPort, Worker } from 'node:worker_threads';
import type { Appended } from './event-log.ts';
import type { IdempotencyRecord } from './idempotency.ts';
import { makeSigner, type SigningKeyData } from '../support/signing.ts';
import { checkpointText, originOf, receiptHeaderOfNote, signedNote } from '../support/checkpoint.ts';

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
  takeSync(): void;
  /** The same, without blocking the event loop. */
  take(): Promise<void>;
}

// Plain JavaScript, so that the thread needs no TypeScript loader, in the tests or in the
// compiled service. It signs the messages it is given (built by signing.ts on the caller's
// side) and counts the batches it has answered in `done`, for a caller that waits with
// Atomics.wait instead of an event loop.
const THREAD_CODE = `
const { workerData } = require('node:worker_threads');
const { createPrivateKey, sign } = require('node:crypto');
const key = createPrivateKey(workerData.pem);
const { port, done } = workerData;
port.on('message', ({ id, messages }) => {
  const signatures = messages.map((m) => sign(null, Buffer.from(m, 'utf8'), key).toString('base64'));
  port.postMessage({ id, signatures });
  Atomics.store(done, 0, id);
  Atomics.notify(done, 0);
});
`;

/** How long a caller waits for the thread before it signs in place. */
const THREAD_WAIT_MS = 5_000;

/**
 * Receipts signed with key for the log logId. 'thread-sync': on a thread, waited for by
 * blocking (a worker thread that writes, as SQLite's writer does); 'thread-async': on a
 * thread, waited for as a promise (an event loop); 'in-place': on the calling thread.
 */
export function makeReceiptSigning(key: SigningKeyData, logId: string, mode: 'thread-sync' | 'thread-async' | 'in-place'): ReceiptSigning {
  const signer = makeSigner(key);
  const origin = originOf(logId);
  const rawPublicKey = Buffer.from(signer.publicKey, 'base64url');
  /** The checkpoint's text: the batch's tree as of now; undefined when nothing is signed. */
  const textOf = ({ receipts, tree, keys }: BatchToSign) =>
    receipts.length === 0 || !tree.root
      ? undefined
      : checkpointText({ origin, size: tree.size, root: tree.root, keys, time: new Date().toISOString() });
  const put = (batch: BatchToSign, text: string | undefined, signatures: readonly string[]) => {
    if (text === undefined) return;
    const note = signedNote(text, origin, rawPublicKey, Buffer.from(signatures[0]!, 'base64'));
    const noteBase64 = Buffer.from(note, 'utf8').toString('base64');
    for (const p of batch.receipts) {
      const receipt = receiptHeaderOfNote(logId, p.seq, p.hash, noteBase64, p.proof ?? []);
      p.appended.receipt = receipt;
      p.appended.checkpoint = note;
      if (p.record) p.record.receipt = receipt;
    }
  };
  const signHere = (batch: BatchToSign, text = textOf(batch)) =>
    put(batch, text, text === undefined ? [] : [signer.sign(text).toString('base64')]);
  const here = (batch: BatchToSign, text = textOf(batch)): Ticket => {
    let signed = false;
    const once = () => {
      if (!signed) signHere(batch, text);
      signed = true;
    };
    return { takeSync: once, take: () => Promise.resolve(once()) };
  };
  if (mode === 'in-place') return { start: here, inPlace: signHere, close: async () => {} };

  const { port1: port, port2 } = new MessageChannel();
  const done = new Int32Array(new SharedArrayBuffer(4));
  const thread = new Worker(THREAD_CODE, { eval: true, workerData: { pem: key.pem, port: port2, done }, transferList: [port2] });
  thread.unref();
  let alive = true;
  // By batch: what to do with its signatures (undefined: sign in place). Async mode only.
  const waiting = new Map<number, (signatures: string[] | undefined) => void>();
  const stop = () => {
    alive = false;
    for (const w of waiting.values()) w(undefined);
    waiting.clear();
  };
  thread.on('error', stop);
  thread.on('exit', stop);
  if (mode === 'thread-async') {
    port.on('message', ({ id, signatures }: Answer) => {
      waiting.get(id)?.(signatures);
      waiting.delete(id);
    });
    port.unref();
  }
  let nextId = 0;

  const startSync = (batch: BatchToSign, text: string, id: number): Ticket => {
    const fallback = here(batch, text);
    let taken = false;
    const takeSync = () => {
      if (taken) return;
      taken = true;
      const deadline = Date.now() + THREAD_WAIT_MS;
      for (;;) {
        const answer = receiveMessageOnPort(port)?.message as Answer | undefined;
        if (answer) {
          if (answer.id === id) return put(batch, text, answer.signatures);
          // An earlier batch's answer (that batch failed, its receipts unread) is dropped.
          if (answer.id < id) continue;
          return fallback.takeSync();
        }
        const remaining = deadline - Date.now();
        if (!alive || remaining <= 0) return fallback.takeSync();
        const seen = Atomics.load(done, 0);
        if (seen < id) Atomics.wait(done, 0, seen, remaining);
      }
    };
    return { takeSync, take: () => Promise.resolve(takeSync()) };
  };

  const startAsync = (batch: BatchToSign, text: string, id: number): Ticket => {
    const signed = new Promise<void>((resolve) => {
      const timer = setTimeout(() => waiting.get(id)?.(undefined), THREAD_WAIT_MS);
      timer.unref();
      // Held open while a batch waits (and only then): the thread must not keep a process alive.
      if (waiting.size === 0) port.ref();
      waiting.set(id, (signatures) => {
        waiting.delete(id);
        if (waiting.size === 0) port.unref();
        clearTimeout(timer);
        if (signatures) put(batch, text, signatures);
        else signHere(batch, text);
        resolve();
      });
    });
    return {
      takeSync: () => {
        throw new Error('an event loop waits for its receipts with take()');
      },
      take: () => signed,
    };
  };

  return {
    inPlace: signHere,
    close: async () => {
      port.close();
      await thread.terminate();
    },
    start(batch) {
      const text = textOf(batch);
      if (!alive || text === undefined) return here(batch, text);
      const id = ++nextId;
      const ticket = mode === 'thread-sync' ? startSync(batch, text, id) : startAsync(batch, text, id);
      port.postMessage({ id, messages: [text] });
      return ticket;
    },
  };
}

interface Answer {
  id: number;
  signatures: string[];
}
