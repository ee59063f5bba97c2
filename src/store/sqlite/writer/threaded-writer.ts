// The service's writes, in the writer thread (worker.ts): started, signing with the
// instance's key, supervised (started again after a crash), and refused at once, on this
// thread, once the database path no longer names the file.
import { WAL_LIMIT_BYTES, type OpenOptions } from '../database.ts';
import { StoreUnavailable } from '../../health.ts';
import { recordFileIdentity } from '../file-identity.ts';
import { readOnlyProblem } from '../reads/read-only.ts';
import { rescueMessage } from '../side-files.ts';
import { signWith, type StoreWriter } from '../store-port.ts';
import { superviseWriter } from './supervised-writer.ts';
import { walBytes } from '../wal-keeper.ts';
import { startWriterThread, type StartWriter } from './worker-client.ts';
import { forwardOperations, invoke, type AsyncWriter } from './writer.ts';
import type { SigningKeyData } from '../../../support/signing.ts';

/** startWriter: starts a writer thread (tests pass one that keeps a handle to stop it as a crash would). */
type ThreadedOptions = Pick<OpenOptions, 'readonly' | 'mustExist' | 'onMigrated' | 'signingKey'> & { startWriter?: StartWriter };

/** Every thread, a restarted one too, signs with the instance's key. */
function signingEveryThread(startThread: StartWriter, key: SigningKeyData | undefined, now: () => number): StartWriter {
  return async (...args) => {
    const thread = await startThread(...args);
    if (!key) return thread;
    try {
      await signWith(thread, key, now);
    } catch (error) {
      await thread.close();
      throw error;
    }
    return thread;
  };
}

/** commits: the count of the thread's commits, kept across its restarts (commitCounter). */
export async function openThreadedWriter(
  path: string,
  options: ThreadedOptions,
  now: () => number,
  commits: Int32Array,
): Promise<StoreWriter> {
  // The thread opens the file first, by the same rules (openDatabase): it creates and
  // migrates it unless told to use it as it is, so that the readers find the current schema.
  const start = signingEveryThread(options.startWriter ?? startWriterThread, options.signingKey, now);
  const first = await start(path, { readonly: options.readonly, mustExist: options.mustExist }, options.onMigrated, commits);
  // A thread started again after a crash uses the database as it is: if the file
  // vanished meanwhile, a new empty one must not take its place.
  const supervised = superviseWriter(first, () => start(path, { readonly: options.readonly, mustExist: true }, undefined, commits));
  // Checked on this thread too, before anything is sent: writes and readiness answer
  // 503 at once once the path no longer names the file (the thread checks every batch
  // again just before it commits), and no new thread is started onto another file.
  const identity = recordFileIdentity(path);
  // The thread saves what it acknowledged when the side files are lost; the message says how that went.
  const fileProblem = () => {
    const problem = identity.problem();
    return problem && problem + rescueMessage(supervised.rescue());
  };
  // Known at start: a file the thread's connection cannot write (it was opened read-only).
  // A probe that writes says otherwise (its thread was started again on writable files).
  let readOnly = readOnlyProblem(path);
  return {
    ...forwardOperations<AsyncWriter>(async (op, args) => {
      const problem = fileProblem();
      if (problem) throw new StoreUnavailable(problem);
      const result = await invoke(supervised, op, args);
      if (op === 'probeWrite') readOnly = undefined;
      return result;
    }),
    close: () => supervised.close(),
    unavailable: () => fileProblem() ?? readOnly ?? supervised.unavailable(),
    storageStatus: () => {
      const since = supervised.walBlockedSince();
      return {
        walBytes: walBytes(path),
        walLimitBytes: WAL_LIMIT_BYTES,
        walCheckpointBlockedForMs: since === undefined ? null : Math.max(0, Date.now() - since),
      };
    },
  };
}
