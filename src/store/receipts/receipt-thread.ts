// The signing thread of the receipts: it signs the checkpoint texts it is given while the
// thread that writes goes on. Its answers are waited for by blocking (a worker thread
// that writes, as SQLite's writer does: 'thread-sync') or as promises (an event loop:
// 'thread-async'); a thread gone, or too slow, and the batch is signed in place.
import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from 'node:worker_threads';
import type { BatchToSign, ReceiptSigning, Ticket } from './receipt-types.ts';
import type { SigningKeyData } from '../../support/signing.ts';
import type { ReceiptNotes } from './receipt-notes.ts';

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

/** The thread's reply: a batch's id and the signatures of its messages. */
interface SignedBatch {
  id: number;
  signatures: string[];
}

/** The thread and its channel, as the ways of waiting for it see them. */
interface SigningThread {
  port: MessagePort;
  /** The id of the last batch the thread answered. */
  done: Int32Array;
  alive(): boolean;
  /** By batch: what to do with its signatures (undefined: sign in place). Async mode only. */
  waiting: Map<number, (signatures: string[] | undefined) => void>;
}

/** A batch's ticket, waited for by blocking on the thread's count of answered batches. */
function blockingTicket(thread: SigningThread, notes: ReceiptNotes, batch: BatchToSign, text: string, id: number): Ticket {
  const fallback = notes.signedWhenTaken(batch, text);
  let taken = false;
  const placeReceiptsSync = () => {
    if (taken) return;
    taken = true;
    const deadline = Date.now() + THREAD_WAIT_MS;
    for (;;) {
      const signed = receiveMessageOnPort(thread.port)?.message as SignedBatch | undefined;
      if (signed) {
        if (signed.id === id) return notes.put(batch, text, signed.signatures);
        // An earlier batch's answer (that batch failed, its receipts unread) is dropped.
        if (signed.id < id) continue;
        return fallback.placeReceiptsSync();
      }
      const remaining = deadline - Date.now();
      if (!thread.alive() || remaining <= 0) return fallback.placeReceiptsSync();
      const seen = Atomics.load(thread.done, 0);
      if (seen < id) Atomics.wait(thread.done, 0, seen, remaining);
    }
  };
  return { placeReceiptsSync, placeReceipts: () => Promise.resolve(placeReceiptsSync()) };
}

/** A batch's ticket, waited for as a promise that the thread's answer settles. */
function promisedTicket(thread: SigningThread, notes: ReceiptNotes, batch: BatchToSign, text: string, id: number): Ticket {
  const { port, waiting } = thread;
  const signed = new Promise<void>((resolve) => {
    const timer = setTimeout(() => waiting.get(id)?.(undefined), THREAD_WAIT_MS);
    timer.unref();
    // Held open while a batch waits (and only then): the thread must not keep a process alive.
    if (waiting.size === 0) port.ref();
    waiting.set(id, (signatures) => {
      waiting.delete(id);
      if (waiting.size === 0) port.unref();
      clearTimeout(timer);
      if (signatures) notes.put(batch, text, signatures);
      else notes.signHere(batch, text);
      resolve();
    });
  });
  return {
    placeReceiptsSync: () => {
      throw new Error('an event loop waits for its receipts with placeReceipts()');
    },
    placeReceipts: () => signed,
  };
}

/** Starts the thread; its answers reach `waiting` in async mode. */
function startSigningThread(key: SigningKeyData, mode: 'thread-sync' | 'thread-async'): SigningThread & { worker: Worker } {
  const { port1: port, port2 } = new MessageChannel();
  const done = new Int32Array(new SharedArrayBuffer(4));
  const worker = new Worker(THREAD_CODE, { eval: true, workerData: { pem: key.pem, port: port2, done }, transferList: [port2] });
  worker.unref();
  let alive = true;
  const waiting = new Map<number, (signatures: string[] | undefined) => void>();
  const stop = () => {
    alive = false;
    for (const w of waiting.values()) w(undefined);
    waiting.clear();
  };
  worker.on('error', stop);
  worker.on('exit', stop);
  if (mode === 'thread-async') {
    port.on('message', ({ id, signatures }: SignedBatch) => {
      waiting.get(id)?.(signatures);
      waiting.delete(id);
    });
    port.unref();
  }
  return { port, done, alive: () => alive, waiting, worker };
}

/** Receipts signed on a thread of their own, waited for as mode says. */
export function signOnThread(key: SigningKeyData, notes: ReceiptNotes, mode: 'thread-sync' | 'thread-async'): ReceiptSigning {
  const thread = startSigningThread(key, mode);
  const ticketOf = mode === 'thread-sync' ? blockingTicket : promisedTicket;
  let nextId = 0;
  return {
    inPlace: notes.signHere,
    close: async () => {
      thread.port.close();
      await thread.worker.terminate();
    },
    start(batch) {
      const text = notes.textOf(batch);
      if (!thread.alive() || text === undefined) return notes.signedWhenTaken(batch, text);
      const id = ++nextId;
      const ticket = ticketOf(thread, notes, batch, text, id);
      thread.port.postMessage({ id, messages: [text] });
      return ticket;
    },
  };
}
