// Starts the writer thread (worker.ts) and calls its operations as promises. The
// writer's synchronous functions become asynchronous ones with the same arguments.
import { Worker } from 'node:worker_threads';
import type { OpenOptions } from './database.ts';
import type { Outcome } from '../event-log.ts';
import { StoreUnavailable } from '../health.ts';
import { fromWire, type WireError } from './errors.ts';
import { walShared } from './wal-keeper.ts';
import type { Reply, Request } from './worker-protocol.ts';
import type { Writer } from './writer.ts';
import { WORKER_ENTRY } from './worker-entry.ts';

export type AsyncWriter = { [K in keyof Writer]: (...args: Parameters<Writer[K]>) => Promise<ReturnType<Writer[K]>> } & {
  close(): Promise<void>;
};

/** A writer thread, which can stop on its own (a crash, running out of memory). */
export type ThreadWriter = AsyncWriter & {
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

/** Resolves once the thread has opened (and, unless told not to, migrated) the database. */
export function startWriterThread(
  path: string,
  options: Pick<OpenOptions, 'readonly' | 'mustExist'> = {},
  onMigrated?: (applied: string[]) => void,
  commits: Int32Array = commitCounter(),
): Promise<ThreadWriter> {
  const shared = walShared();
  const worker = new Worker(WORKER_ENTRY, { workerData: { path, options, shared: shared.buffer, commits } });
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

  const call = (op: Request['op'], args: unknown[]): Promise<unknown> =>
    new Promise((resolve, reject) => {
      if (stopped) return reject(stopped);
      const id = nextId++;
      pending.set(id, { resolve, reject });
      // The thread checkpoints only while nothing is queued (worker.ts).
      Atomics.add(shared.queued, 0, 1);
      worker.postMessage({ id, op, args } satisfies Request);
    });

  const ready = new Promise<void>((resolve, reject) => {
    pending.set(0, {
      resolve: (applied) => {
        onMigrated?.(applied as string[]);
        resolve();
      },
      reject,
    });
  });

  const writer: ThreadWriter = {
    appendBatch: async (submissions, options) => {
      const outcomes = (await call('appendBatch', [submissions, options])) as Outcome<unknown>[];
      return outcomes.map((o) => (o.ok ? o : { ok: false, error: fromWire(o.error as WireError) })) as ReturnType<Writer['appendBatch']>;
    },
    createKey: (...args) => call('createKey', args) as Promise<string>,
    createFirstKey: (...args) => call('createFirstKey', args) as Promise<string | undefined>,
    revokeKey: (...args) => call('revokeKey', args) as ReturnType<AsyncWriter['revokeKey']>,
    probeWrite: () => call('probeWrite', []) as Promise<void>,
    useSigningKey: (...args) => call('useSigningKey', args) as Promise<void>,
    addSigningKey: (...args) => call('addSigningKey', args) as ReturnType<AsyncWriter['addSigningKey']>,
    retireSigningKey: (...args) => call('retireSigningKey', args) as ReturnType<AsyncWriter['retireSigningKey']>,
    expireIdempotency: (...args) => call('expireIdempotency', args) as Promise<number>,
    replaceProjection: (...args) => call('replaceProjection', args) as ReturnType<AsyncWriter['replaceProjection']>,
    async close() {
      if (!stopped) await call('close', []);
      await worker.terminate();
    },
    stopped: () => stopped,
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
