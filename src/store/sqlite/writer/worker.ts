// The writer thread: it owns the service's one write connection, so that waiting for
// SQLite's write lock (up to busy_timeout, 5 s) or for the disk blocks this thread and
// never the event loop that parses, authenticates and answers. It runs one operation
// at a time, in the order they arrive.
import { parentPort, workerData } from 'node:worker_threads';
import { openDatabase, WAL_LIMIT_BYTES, type OpenOptions } from '../database.ts';
import { toWire } from '../errors.ts';
import type { SubmissionOutcome } from '../../event-log.ts';
import { recordFileIdentity } from '../file-identity.ts';
import { Rescue, rescueMessage, saveAcknowledged } from '../side-files.ts';
import { makeWalKeeper, walShared } from '../wal-keeper.ts';
import type { Request, Reply } from './worker-protocol.ts';
import { invoke, makeWriter, type Writer } from './writer.ts';

const port = parentPort!;
const { path, options, shared, commits } = workerData as {
  path: string;
  options: Pick<OpenOptions, 'readonly' | 'mustExist'>;
  shared: SharedArrayBuffer;
  /** commitCounter (worker-client.ts): one more after each operation that may have committed. */
  commits: Int32Array;
};
const wal = walShared(shared);
// How often an idle writer looks at the log's size: a pinned log shrinks within this
// once its reader is gone, even when no write comes.
const IDLE_CHECK_MS = 250;

let db: ReturnType<typeof openDatabase>;
let writer: Writer;
let rescueLog = () => {};
try {
  let applied: string[] = [];
  db = openDatabase(path, { ...options, onMigrated: (names) => (applied = names) });
  const identity = recordFileIdentity(path);
  writer = makeWriter(db, {
    fileProblem: () => identity.problem()?.concat(rescueMessage(Atomics.load(wal.rescue, 0))),
    signingThread: true,
  });
  const keeper = makeWalKeeper(db, path, WAL_LIMIT_BYTES, wal);
  // Once the -wal or -shm is no longer at its path, the writes acknowledged since the
  // last checkpoint are only in the log this connection holds: copied into the database
  // file at once (before each operation, and every IDLE_CHECK_MS), if that is safe.
  rescueLog = () => {
    if (Atomics.load(wal.rescue, 0) !== Rescue.NotNeeded || options.readonly || !identity.sideFilesLost()) return;
    const outcome = saveAcknowledged(db, path);
    if (outcome !== undefined) Atomics.store(wal.rescue, 0, outcome);
  };
  // Never while an operation waits: a batch queued behind a checkpoint would wait for it.
  // No idle checkpoint into a file whose side files are not ours: only the rescue above.
  setInterval(() => {
    if (Atomics.load(wal.queued, 0) !== 0 || !db.open || options.readonly) return;
    rescueLog();
    if (identity.problem() === undefined) keeper.idle();
  }, IDLE_CHECK_MS).unref();
  port.postMessage({ id: 0, ok: true, value: applied } satisfies Reply);
} catch (error) {
  port.postMessage({ id: 0, ok: false, error: toWire(error) } satisfies Reply);
  process.exit(1);
}

port.on('message', (request: Request) => {
  let reply: Reply;
  try {
    if (request.op === 'close') {
      db.close();
      Atomics.sub(wal.queued, 0, 1);
      port.postMessage({ id: request.id, ok: true, value: undefined } satisfies Reply);
      port.close();
      return;
    }
    rescueLog();
    const value = invoke(writer, request.op, request.args);
    reply = {
      id: request.id,
      ok: true,
      // A submission's own failure (a conflict, a constraint) travels as data too; a
      // refusal is plain data already.
      value:
        request.op === 'appendBatch'
          ? (value as SubmissionOutcome[]).map((o) => ('error' in o ? { ok: false, error: toWire(o.error) } : o))
          : value,
    };
  } catch (error) {
    reply = { id: request.id, ok: false, error: toWire(error) };
  }
  // Before the answer: whoever hears of this commit finds the count moved already. A
  // failed operation may have committed too (its commit's outcome unknown); a probe never does.
  if (request.op !== 'probeWrite') Atomics.add(commits, 0, 1);
  Atomics.sub(wal.queued, 0, 1);
  port.postMessage(reply);
});
