// Starts the writer thread (worker.ts) and calls its operations as promises. The
// writer's synchronous functions become asynchronous ones with the same arguments.
import { Worker } from 'node:worker_threads';
import type { OpenOptions } from '../database.ts';
import type { SubmissionOutcome } from '../../event-log.ts';
import { StoreUnavailable } from '../../health.ts';
import { fromWire, type WireError } from '../errors.ts';
import { walShared } from '../wal-keeper.ts';
import type { Reply, Request } from './worker-protocol.ts';
import { forwardOperations, type AsyncWriter } from './writer.ts';
import { WORKER_ENTRY } from './worker-entry.ts';

/** A writer thread, which can stop on its own (a crash, running out of memory). */
export type ThreadWriter = AsyncWriter & {
  close(): Promise<void>;
  /** Why the thread stopped; undefined while it runs. */
  stopped(): StoreUnavailable | undefined;
  /** Stops the thread at once, as a crash would: what it was doing is not finished. */
  terminate(): Promise<void>;
  /** Since when (Date.now) the thread's idle checkpoints have been held back by a reader; undefined when not. */
  walBlockedSince(): number | undefined;
  /** What the thread did with its log once its -wal or -shm was lost (side-files.ts Rescue). */
  rescue(): number;
};

export type StartWriter = typeof startWriterThread;

/** A count the writer thread adds one to after each operation that may have committed,
 * before it answers: the main thread reads it (Atomics.load) to know that its process
 * wrote, without a message or a statement. Kept by the store across thread restarts. */
export function commitCounter(): Int32Array {
  return new Int32Array(new SharedArrayBuffer(4));
}

/** The thread's calls and their replies; once it stops, every call fails with why. */
interface Calls {
  call: (op: Request['op'], args: unknown[]) => Promise<unknown>;
  /** Settles once the thread has opened the database (its first reply). */
  ready: Promise<void>;
  stopped: () => StoreUnavailable | undefined;
}

/** queued: the count of calls sent, which the thread checkpoints only at zero (worker.ts). */
function makeCalls(worker: Worker, queued: Int32Array, onMigrated?: (applied: string[]) => void): Calls {
  const pending = new Map<number, { resolve: (value: unknown) => void; reject: (error: unknown) => void }>();
  let nextId = 1;
  let stopped: StoreUnavailable | undefined;

  const fail = (error: StoreUnavailable) => {
    stopped ??= error;
    for (const p of pending.values()) p.reject(stopped);
    pending.clear();
  };
  worker.on('message', (reply: Reply) => {
    const p = pending.get(reply.id);
    if (!p) return;
    pending.delete(reply.id);
    if (reply.ok) p.resolve(reply.value);
    else p.reject(fromWire(reply.error));
  });
  worker.on('error', (error) => fail(new StoreUnavailable(`the database writer thread failed: ${error.message}`, { cause: error })));
  worker.on('exit', (code) => fail(new StoreUnavailable(`the database writer thread stopped (exit code ${code})`)));

  const ready = new Promise<void>((resolve, reject) => {
    pending.set(0, {
      resolve: (applied) => {
        onMigrated?.(applied as string[]);
        resolve();
      },
      reject,
    });
  });
  return {
    call: (op, args) =>
      new Promise((resolve, reject) => {
        if (stopped) return reject(stopped);
        const id = nextId++;
        pending.set(id, { resolve, reject });
        Atomics.add(queued, 0, 1);
        worker.postMessage({ id, op, args } satisfies Request);
      }),
    ready,
    stopped: () => stopped,
  };
}

/** Resolves once the thread has opened (and, unless told not to, migrated) the database. */
export function startWriterThread(
  path: string,
  options: Pick<OpenOptions, 'readonly' | 'mustExist'> = {},
  onMigrated?: (applied: string[]) => void,
  commits: Int32Array = commitCounter(),
): Promise<ThreadWriter> {
  const shared = walShared();
  const worker = new Worker(WORKER_ENTRY, { workerData: { path, options, shared: shared.buffer, commits } });
  const { call, ready, stopped } = makeCalls(worker, shared.queued, onMigrated);
  const writer: ThreadWriter = {
    ...forwardOperations<AsyncWriter>((op, args) => call(op, args)),
    appendBatch: async (submissions, options) => {
      const outcomes = (await call('appendBatch', [submissions, options])) as SubmissionOutcome[];
      return outcomes.map((o) => ('error' in o ? { ok: false, error: fromWire(o.error as WireError) } : o));
    },
    async close() {
      if (!stopped()) await call('close', []);
      await worker.terminate();
    },
    stopped,
    async terminate() {
      await worker.terminate();
    },
    walBlockedSince: () => shared.blockedSince[0] || undefined,
    rescue: () => Atomics.load(shared.rescue, 0),
  };
  return ready.then(
    () => writer,
    async (error) => {
      await worker.terminate();
      throw error;
    },
  );
}
