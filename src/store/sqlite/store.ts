// The SQLite adapter of the storage port (port.ts). Two ways to run it:
// - openSqliteStore(path) for the service: the write connection lives in a worker
//   thread (worker.ts), so a batch waiting for the write lock or the disk never stalls
//   the event loop; reads go through two read-only WAL connections on this thread.
// - sqliteStoreOn(db) on one connection, writes in place: for operator commands (a
//   process that serves nobody else), `:memory:` databases and tests that reach into
//   the connection.
// Its methods are async without awaiting: this adapter implements an asynchronous port over
// a synchronous driver, and `async` turns a throw into a rejection, as the port promises.
/* eslint-disable @typescript-eslint/require-await */
import { openDatabase, WAL_LIMIT_BYTES, type Db, type OpenOptions } from './database.ts';
import { pagesAfter } from '../idempotency.ts';
import type { KeyStore } from '../keys.ts';
import { StoreUnavailable, type StorageStatus } from '../health.ts';
import type { InventoryStore } from '../port.ts';
import { recordFileIdentity } from './file-identity.ts';
import { readOnlyProblem } from './read-only.ts';
import { rescueMessage } from './side-files.ts';
import { makeReader, type Reader } from './reads.ts';
import { superviseWriter } from './supervised-writer.ts';
import { sqliteFault } from './faults.ts';
import { importHistory } from './import.ts';
import { walBytes } from './wal-keeper.ts';
import { commitCounter, startWriterThread, type StartWriter } from './worker-client.ts';
import { forwardOperations, invoke, makeWriter, type AsyncWriter, type Writer } from './writer.ts';
import { makeSigner, SIGNING_ACTOR, type SigningKeyData } from '../../support/signing.ts';
import { watchRetirement } from '../retired-key.ts';

interface StoreDeps {
  /** The clock that stamps keys' creation and revocation. */
  now?: () => number;
}

interface Extras {
  close(): Promise<void>;
  unavailable?: () => string | undefined;
  storageStatus?: () => StorageStatus | undefined;
  /** Only writing in place: the copy's transaction waits on its source between pages. */
  importHistory?: InventoryStore['importHistory'];
}

function assemble(reader: Reader, writer: AsyncWriter & Extras, now: () => number): InventoryStore {
  const at = () => new Date(now()).toISOString();
  const keys: KeyStore = {
    create: (name, createdBy, scope) => writer.createKey(name, createdBy, at(), scope),
    createFirst: (name, createdBy) => writer.createFirstKey(name, createdBy, at()),
    revoke: (name, revokedBy) => writer.revokeKey(name, revokedBy, at()),
    authenticate: async (key) => reader.keys.authenticate(key),
    // A point read on this thread, which never waits for the write lock.
    verdictNow: (key) => reader.keys.authenticateRequest(key) ?? null,
    onDistrust: (listener) => reader.keys.onDistrust(listener),
    list: async () => reader.keys.list(),
    count: async () => reader.keys.count(),
  };
  return {
    loadEntries: async (petIds) => reader.loadEntries(petIds),
    appendBatch: (submissions, { onCommitting, ...options } = {}) => {
      // Once the batch is in the writer's hands, whether it commits is out of ours.
      onCommitting?.();
      return writer.appendBatch(submissions, options);
    },
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
    eventsAfter: async (after, limit) => reader.eventsAfter(after, limit),
    stockAdjustments: (filter) => reader.stockAdjustments(filter),
    snapshot: (read) => reader.snapshot(read),
    replaceProjection: (entries, after) => writer.replaceProjection(entries, after),
    importHistory: writer.importHistory ?? (() => Promise.reject(new Error(THREADED_IMPORT))),
    keys,
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

const THREADED_IMPORT =
  'a store writing through its writer thread cannot take a copy (its transaction would wait on the source between pages): open it in place';

function signWith(writer: Pick<AsyncWriter, 'useSigningKey'>, key: SigningKeyData, now: () => number): Promise<void> {
  return writer.useSigningKey(key, new Date(now()).toISOString(), SIGNING_ACTOR);
}

/** The store, its writes refused once the instance's key is retired (watchRetirement). */
function retirable(store: InventoryStore, key: SigningKeyData | undefined): InventoryStore {
  return key ? watchRetirement(store, makeSigner(key).keyId) : store;
}

/** The log of a connection's file, without the writer thread's checkpoint watch. */
function fileStatus(db: Db): () => StorageStatus | undefined {
  return () => (db.memory ? undefined : { walBytes: walBytes(db.name), walLimitBytes: WAL_LIMIT_BYTES, walCheckpointBlockedForMs: null });
}

/** Runs a writer's functions in place, behind the same asynchronous face. */
function inPlace(db: Db, close: () => void): AsyncWriter & Extras {
  // Made at the first write: a read-only connection never prepares a write.
  let writer: Writer | undefined;
  const w = () => (writer ??= makeWriter(db));
  return {
    ...forwardOperations<AsyncWriter>(async (op, args) => invoke(w(), op, args)),
    close: async () => close(),
    storageStatus: fileStatus(db),
    importHistory: (history) => importHistory(db, history),
  };
}

/** The port over one open connection, writes in place. close() leaves db open. */
export function sqliteStoreOn(db: Db, deps: StoreDeps = {}): InventoryStore {
  return assemble(
    makeReader(db, db, { yieldBetweenPages: false }),
    inPlace(db, () => {}),
    deps.now ?? Date.now,
  );
}

export interface SqliteOpenOptions extends OpenOptions {
  /** 'thread' (the service): writes in a worker thread. 'inline' (default): in place. */
  writer?: 'thread' | 'inline';
  /** Starts a writer thread (tests pass one that keeps a handle to stop it as a crash would). */
  startWriter?: StartWriter;
}

/** Opens the database at path (openDatabase: our pragmas, migrations, checks). */
export async function openSqliteStore(path: string, options: SqliteOpenOptions & StoreDeps = {}): Promise<InventoryStore> {
  const now = options.now ?? Date.now;
  if (options.writer !== 'thread') {
    const db = openDatabase(path, {
      readonly: options.readonly,
      mustExist: options.mustExist,
      auditing: options.auditing,
      onMigrated: options.onMigrated,
    });
    const writer = inPlace(db, () => db.close());
    if (options.signingKey) await signWith(writer, options.signingKey, now);
    return retirable(assemble(makeReader(db, db, { yieldBetweenPages: false }), writer, now), options.signingKey);
  }
  if (path === ':memory:') throw new Error('a writer thread needs a database file, not :memory:');
  // The thread opens the file first, by the same rules (openDatabase): it creates and
  // migrates it unless told to use it as it is, so that the readers find the current schema.
  const startThread = options.startWriter ?? startWriterThread;
  // Every thread, a restarted one too, signs with the instance's key.
  const start: StartWriter = async (...args) => {
    const thread = await startThread(...args);
    if (!options.signingKey) return thread;
    try {
      await signWith(thread, options.signingKey, now);
    } catch (error) {
      await thread.close();
      throw error;
    }
    return thread;
  };
  const commits = commitCounter();
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
  const unavailable = () => fileProblem() ?? readOnly ?? supervised.unavailable();
  const writer: AsyncWriter & Extras = {
    ...forwardOperations<AsyncWriter>(async (op, args) => {
      const problem = fileProblem();
      if (problem) throw new StoreUnavailable(problem);
      const result = await invoke(supervised, op, args);
      if (op === 'probeWrite') readOnly = undefined;
      return result;
    }),
    close: () => supervised.close(),
    unavailable,
    storageStatus: () => {
      const since = supervised.walBlockedSince();
      return {
        walBytes: walBytes(path),
        walLimitBytes: WAL_LIMIT_BYTES,
        walCheckpointBlockedForMs: since === undefined ? null : Math.max(0, Date.now() - since),
      };
    },
  };
  let point: Db | undefined;
  let scan: Db | undefined;
  try {
    point = openDatabase(path, { readonly: true });
    scan = openDatabase(path, { readonly: true });
  } catch (error) {
    point?.close();
    await writer.close();
    throw error;
  }
  const readers = [point, scan];
  const reader = makeReader(point, scan, { yieldBetweenPages: true, ownCommits: () => Atomics.load(commits, 0) });
  const store = retirable(assemble(reader, writer, now), options.signingKey);
  return {
    ...store,
    async close() {
      await writer.close();
      for (const db of readers) db.close();
    },
  };
}
