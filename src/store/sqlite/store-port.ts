// The storage port (port.ts) over a reader (reads.ts, on the calling thread) and a writer
// that runs its operations in place or in the writer thread, behind one asynchronous face.
// Its methods are async without awaiting: this adapter implements an asynchronous port over
// a synchronous driver, and `async` turns a throw into a rejection, as the port promises.
/* eslint-disable @typescript-eslint/require-await */
import { pagesAfter } from '../idempotency.ts';
import type { KeyStore } from '../keys.ts';
import type { StorageStatus } from '../health.ts';
import type { BatchOptions } from '../event-log.ts';
import type { InventoryStore } from '../port.ts';
import type { Reader } from './reads/reads.ts';
import { sqliteFault } from './faults.ts';
import type { AsyncWriter } from './writer/writer.ts';
import { SIGNING_ACTOR, type SigningKeyData } from '../../support/signing.ts';

/** A writer's operations as promises, and what the store asks of how it writes. */
export type StoreWriter = AsyncWriter & {
  close(): Promise<void>;
  unavailable?: () => string | undefined;
  storageStatus?: () => StorageStatus | undefined;
  /** Only writing in place: the copy's transaction waits on its source between pages. */
  importHistory?: InventoryStore['importHistory'];
  appendHistory?: InventoryStore['appendHistory'];
};

const THREADED_IMPORT =
  'a store writing through its writer thread cannot take a copy (its transaction would wait on the source between pages): open it in place';

/** Signs the writer's later batches with the instance's key, entering it in the key log first. */
export function signWith(writer: Pick<AsyncWriter, 'useSigningKey'>, key: SigningKeyData, now: () => number): Promise<void> {
  return writer.useSigningKey(key, new Date(now()).toISOString(), SIGNING_ACTOR);
}

/** The keys: written by the writer at the clock's time, read on this thread. */
function keyStoreOver(reader: Reader, writer: StoreWriter, at: () => string): KeyStore {
  return {
    create: (name, createdBy, scope) => writer.createKey(name, createdBy, at(), scope),
    createFirst: (name, createdBy) => writer.createFirstKey(name, createdBy, at()),
    revoke: (name, revokedBy) => writer.revokeKey(name, revokedBy, at()),
    authenticate: async (key) => reader.keys.authenticate(key),
    // A point read on this thread, which never waits for the write lock.
    authenticateFromMemory: (key) => reader.keys.authenticateRequest(key) ?? null,
    onDistrust: (listener) => reader.keys.onDistrust(listener),
    list: async () => reader.keys.list(),
    count: async () => reader.keys.count(),
  };
}

/** The batch's options as they can be sent to the writer thread. */
function withoutDecideAgain(options: BatchOptions | undefined): BatchOptions | undefined {
  if (options?.decideAgain === undefined) return options;
  const sendable = { ...options };
  delete sendable.decideAgain;
  return sendable;
}

/** now: the clock that stamps keys' creation and revocation and signing keys' changes. */
export function portOver(reader: Reader, writer: StoreWriter, now: () => number): InventoryStore {
  const at = () => new Date(now()).toISOString();
  return {
    loadEntries: async (petIds) => reader.loadEntries(petIds),
    // A stale submission is not decided again here: the writer thread, which holds the
    // lock, cannot call back into this one (a function does not cross to a worker), and
    // SQLite's single writer makes another process's commit in between rare; the command
    // handler's retry takes it.
    appendBatch: (submissions, options) => writer.appendBatch(submissions, withoutDecideAgain(options)),
    commitOutcome: async ({ seq, hash }) => {
      if (seq === undefined) return 'unknown';
      return reader.hashAt(seq) === hash ? 'committed' : 'not committed';
    },
    changeToken: async () => reader.changeToken(),
    changeTokenNow: () => reader.changeToken(),
    inventoryRows: () => reader.inventoryRows(),
    replayRows: (range) => reader.replayRows(range),
    chainRows: () => reader.chainRows(),
    keyHistory: () => reader.keyHistory(),
    missingGuards: () => reader.missingGuards(),
    logHead: async () => reader.logHead(),
    signingKeys: async () => reader.signingKeys(),
    treeNodes: async (keys) => reader.treeNodes(keys),
    treeNodeCount: async () => reader.treeNodeCount(),
    treeRow: async (level, from, count) => reader.treeRow(level, from, count),
    eventsAfter: async (after, limit) => reader.eventsAfter(after, limit),
    stockAdjustments: (filter) => reader.stockAdjustments(filter),
    adjustmentMismatch: () => reader.adjustmentMismatch(),
    petEvents: (petId) => reader.petEvents(petId),
    firstSeqAfter: (at) => reader.firstSeqAfter(at),
    snapshot: (read) => reader.snapshot(read),
    replaceProjection: (entries, after) => writer.replaceProjection(entries, after),
    importHistory: writer.importHistory ?? (() => Promise.reject(new Error(THREADED_IMPORT))),
    appendHistory: writer.appendHistory ?? (() => Promise.reject(new Error(THREADED_IMPORT))),
    keys: keyStoreOver(reader, writer, at),
    idempotency: {
      find: async (scope, at) => reader.idempotency.find(scope, at),
      count: async () => reader.idempotency.count(),
      unexpired: (at) => pagesAfter(async (after) => reader.idempotency.page(at, after)),
      expire: (at, limit) => writer.expireIdempotency(at, limit),
    },
    keyRecords: async () => reader.keys.records(),
    addSigningKey: (entry, actor) => writer.addSigningKey(entry, at(), actor),
    retireSigningKey: (keyId, actor) => writer.retireSigningKey(keyId, at(), actor),
    ping: async () => reader.ping(),
    probeWrite: () => writer.probeWrite(),
    unavailable: () => writer.unavailable?.(),
    diagnostics: () => ({ store: 'sqlite', wal: writer.storageStatus?.() }),
    fault: sqliteFault,
    close: () => writer.close(),
  };
}
