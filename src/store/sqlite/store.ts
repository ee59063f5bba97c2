// The SQLite adapter of the storage port (port.ts). Two ways to run it:
// - openSqliteStore(path) for the service: the write connection lives in a worker
//   thread (worker.ts), so a batch waiting for the write lock or the disk never stalls
//   the event loop; reads go through two read-only WAL connections on this thread.
// - sqliteStoreOn(db) on one connection, writes in place: for operator commands (a
//   process that serves nobody else), `:memory:` databases and tests that reach into
//   the connection.
import { openDatabase, type Db, type OpenOptions } from '../database.ts';
import type { KeyStore } from '../keys.ts';
import type { InventoryStore } from '../port.ts';
import { makeReader, type Reader } from './reader.ts';
import { superviseWriter } from './supervised-writer.ts';
import { startWriterThread, type AsyncWriter, type StartWriter } from './worker-client.ts';
import { makeWriter, type Writer } from './writer.ts';

export interface StoreDeps {
  /** The clock that stamps keys' creation and revocation. */
  now?: () => number;
}

function assemble(reader: Reader, writer: AsyncWriter & { unavailable?: () => string | undefined }, now: () => number): InventoryStore {
  const at = () => new Date(now()).toISOString();
  const keys: KeyStore = {
    create: (name, createdBy) => writer.createKey(name, createdBy, at()),
    createFirst: (name, createdBy) => writer.createFirstKey(name, createdBy, at()),
    revoke: (name, revokedBy) => writer.revokeKey(name, revokedBy, at()),
    authenticate: async (key) => reader.keys.authenticate(key),
    list: async () => reader.keys.list(),
    count: async () => reader.keys.count(),
  };
  return {
    loadEntries: async (petIds) => reader.loadEntries(petIds),
    appendBatch: (submissions, options) => writer.appendBatch(submissions, options),
    changeToken: async () => reader.changeToken(),
    inventoryRows: () => reader.inventoryRows(),
    entries: () => reader.entries(),
    lastSeq: () => reader.lastSeq(),
    replayRows: (range) => reader.replayRows(range),
    chainRows: () => reader.chainRows(),
    stockAdjustments: (filter) => reader.stockAdjustments(filter),
    snapshot: (read) => reader.snapshot(read),
    replaceProjection: (entries, after) => writer.replaceProjection(entries, after),
    keys,
    ping: async () => reader.ping(),
    probeWrite: () => writer.probeWrite(),
    unavailable: () => writer.unavailable?.(),
    close: () => writer.close(),
  };
}

/** Runs a writer's functions in place, behind the same asynchronous face. */
function inPlace(db: Db, close: () => void): AsyncWriter {
  // Made at the first write: a read-only connection never prepares a write.
  let writer: Writer | undefined;
  const w = () => (writer ??= makeWriter(db));
  return {
    appendBatch: async (...args) => w().appendBatch(...args),
    createKey: async (...args) => w().createKey(...args),
    createFirstKey: async (...args) => w().createFirstKey(...args),
    revokeKey: async (...args) => w().revokeKey(...args),
    probeWrite: async () => w().probeWrite(),
    replaceProjection: async (...args) => w().replaceProjection(...args),
    close: async () => close(),
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
    const db = openDatabase(path, { readonly: options.readonly, mustExist: options.mustExist, onMigrated: options.onMigrated });
    return assemble(
      makeReader(db, db, { yieldBetweenPages: false }),
      inPlace(db, () => db.close()),
      now,
    );
  }
  if (path === ':memory:') throw new Error('a writer thread needs a database file, not :memory:');
  // The thread opens the file first, by the same rules (openDatabase): it creates and
  // migrates it unless told to use it as it is, so that the readers find the current schema.
  const start = options.startWriter ?? startWriterThread;
  const first = await start(path, { readonly: options.readonly, mustExist: options.mustExist }, options.onMigrated);
  // A thread started again after a crash uses the database as it is: if the file
  // vanished meanwhile, a new empty one must not take its place.
  const writer = superviseWriter(first, () => start(path, { readonly: options.readonly, mustExist: true }));
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
  const store = assemble(makeReader(point, scan, { yieldBetweenPages: true }), writer, now);
  return {
    ...store,
    async close() {
      await writer.close();
      for (const db of readers) db.close();
    },
  };
}
