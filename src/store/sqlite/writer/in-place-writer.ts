// The writer's operations run in place, on the connection that reads too: for operator
// commands (a process that serves nobody else), `:memory:` databases and tests.
// Its methods are async without awaiting: this adapter implements an asynchronous port over
// a synchronous driver, and `async` turns a throw into a rejection, as the port promises.
/* eslint-disable @typescript-eslint/require-await */
import { WAL_LIMIT_BYTES, type Db } from '../database.ts';
import type { StorageStatus } from '../../health.ts';
import { appendHistory, importHistory } from '../import.ts';
import type { StoreWriter } from '../store-port.ts';
import { walBytes } from '../wal-keeper.ts';
import { forwardOperations, invoke, makeWriter, type AsyncWriter, type Writer } from './writer.ts';

/** The log of a connection's file, without the writer thread's checkpoint watch. */
function fileStatus(db: Db): () => StorageStatus | undefined {
  return () => (db.memory ? undefined : { walBytes: walBytes(db.name), walLimitBytes: WAL_LIMIT_BYTES, walCheckpointBlockedForMs: null });
}

/** Runs a writer's functions in place, behind the same asynchronous face. */
export function writeInPlace(db: Db, close: () => void): StoreWriter {
  // Made at the first write: a read-only connection never prepares a write.
  let writer: Writer | undefined;
  const w = () => (writer ??= makeWriter(db));
  return {
    ...forwardOperations<AsyncWriter>(async (op, args) => invoke(w(), op, args)),
    close: async () => close(),
    storageStatus: fileStatus(db),
    importHistory: (history) => importHistory(db, history),
    appendHistory: (events) => appendHistory(db, events),
  };
}
