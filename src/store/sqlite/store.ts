// The SQLite adapter of the storage port (port.ts). Its writes run one of two ways:
// - in the writer thread (writer 'thread', the service): the write connection lives in a
//   worker thread (threaded-writer.ts), so a batch waiting for the write lock or the disk
//   never stalls the event loop; reads go through two read-only WAL connections on this
//   thread.
// - in place (writer 'inline', the default, which operator commands open through
//   openStore): on the one connection that reads too (in-place-writer.ts). sqliteStoreOn
//   does the same on a connection already open: `:memory:` databases and tests that reach
//   into the connection.
import { openDatabase, type Db, type OpenOptions } from './database.ts';
import type { InventoryStore } from '../port.ts';
import { writeInPlace } from './writer/in-place-writer.ts';
import { makeReader } from './reads/reads.ts';
import { portOver, signWith } from './store-port.ts';
import { openThreadedWriter } from './writer/threaded-writer.ts';
import { commitCounter, type StartWriter } from './writer/worker-client.ts';
import { makeSigner, type SigningKeyData } from '../../support/signing.ts';
import { watchRetirement } from '../retired-key.ts';

interface StoreDeps {
  /** The clock that stamps keys' creation and revocation. */
  now?: () => number;
}

/** The store, its writes refused once the instance's key is retired (watchRetirement). */
function retirable(store: InventoryStore, key: SigningKeyData | undefined): InventoryStore {
  return key ? watchRetirement(store, makeSigner(key).keyId) : store;
}

/** The port over one open connection, writes in place. close() leaves db open. */
export function sqliteStoreOn(db: Db, deps: StoreDeps = {}): InventoryStore {
  return portOver(
    makeReader(db, db, { yieldBetweenPages: false }),
    writeInPlace(db, () => {}),
    deps.now ?? Date.now,
  );
}

export interface SqliteOpenOptions extends OpenOptions {
  /** 'thread' (the service): writes in a worker thread. 'inline' (default): in place. */
  writer?: 'thread' | 'inline';
  /** Starts a writer thread (tests pass one that keeps a handle to stop it as a crash would). */
  startWriter?: StartWriter;
}

/** The store on one connection that reads and writes in place; close() closes it. */
async function openInPlace(path: string, options: SqliteOpenOptions, now: () => number): Promise<InventoryStore> {
  const db = openDatabase(path, {
    readonly: options.readonly,
    mustExist: options.mustExist,
    auditing: options.auditing,
    onMigrated: options.onMigrated,
  });
  const writer = writeInPlace(db, () => db.close());
  if (options.signingKey) await signWith(writer, options.signingKey, now);
  return retirable(portOver(makeReader(db, db, { yieldBetweenPages: false }), writer, now), options.signingKey);
}

/** Opens the database at path (openDatabase: our pragmas, migrations, checks). */
export async function openSqliteStore(path: string, options: SqliteOpenOptions & StoreDeps = {}): Promise<InventoryStore> {
  const now = options.now ?? Date.now;
  if (options.writer !== 'thread') return openInPlace(path, options, now);
  if (path === ':memory:') throw new Error('a writer thread needs a database file, not :memory:');
  const commits = commitCounter();
  const writer = await openThreadedWriter(path, options, now, commits);
  // The reads' two connections: point reads, and scans, which hold theirs while they run.
  let pointDb: Db | undefined;
  let scanDb: Db | undefined;
  try {
    pointDb = openDatabase(path, { readonly: true });
    scanDb = openDatabase(path, { readonly: true });
  } catch (error) {
    pointDb?.close();
    await writer.close();
    throw error;
  }
  const readers = [pointDb, scanDb];
  const reader = makeReader(pointDb, scanDb, { yieldBetweenPages: true, ownCommits: () => Atomics.load(commits, 0) });
  const store = retirable(portOver(reader, writer, now), options.signingKey);
  return {
    ...store,
    async close() {
      await writer.close();
      for (const db of readers) db.close();
    },
  };
}
