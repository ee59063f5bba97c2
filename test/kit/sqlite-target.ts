// The SQLite target: a fresh file in its own temp directory, the port over it through
// the adapter (inline on one connection, or with the writer thread), and faults made
// through that connection's own settings, which is where SQLite keeps them.
// Its methods are async without awaiting: the target's interface is asynchronous (other
// stores need it), SQLite's driver is not.
/* eslint-disable @typescript-eslint/require-await */
import Database from 'better-sqlite3';
import { openDatabase, type Db } from '../../src/store/sqlite/database.ts';
import type { InventoryStore } from '../../src/store/port.ts';
import { openSqliteStore, sqliteStoreOn } from '../../src/store/sqlite/store.ts';
import { tempDir } from './paths.ts';
import type { StoreFaults, StoreTarget } from './stores.ts';

/** A plain connection that runs sql, as anyone with the file could. */
function withRaw(path: string, run: (db: Database.Database) => void): void {
  const raw = new Database(path, { fileMustExist: true });
  try {
    raw.pragma('busy_timeout = 5000');
    run(raw);
  } finally {
    raw.close();
  }
}

function faultsOn(db: Db): StoreFaults {
  return {
    async fillDisk(roomBytes = 0) {
      // max_page_count stands in for a full disk: the file may grow by roomBytes at most.
      const pages = db.pragma('page_count', { simple: true }) as number;
      const pageSize = db.pragma('page_size', { simple: true }) as number;
      db.pragma(`max_page_count = ${pages + Math.ceil(roomBytes / pageSize)}`);
      return async () => void db.pragma('max_page_count = 1073741823');
    },
    diskFullCode: 'SQLITE_FULL',
    async readOnly() {
      db.pragma('query_only = ON');
      return async () => void db.pragma('query_only = OFF');
    },
    async dropProjection() {
      db.exec('ALTER TABLE inventory RENAME TO inventory_gone');
      const undo = async () => void db.exec('ALTER TABLE inventory_gone RENAME TO inventory');
      return { undo, driverMessage: /no such table/ };
    },
    inTransaction: () => db.inTransaction,
  };
}

export function sqliteTarget(): StoreTarget {
  // The connection under each store opened inline, for its faults.
  const connections = new WeakMap<InventoryStore, Db>();
  return {
    name: 'sqlite',
    async fresh() {
      const dir = tempDir('inv-sqlite-');
      return { db: dir.path('inventory.db'), cleanup: async () => dir.cleanup() };
    },
    async open(path, options = {}) {
      if (options.writer === 'thread') return openSqliteStore(path, { writer: 'thread', now: options.now, readonly: options.readonly });
      const db = openDatabase(path, { readonly: options.readonly });
      const inPlace = sqliteStoreOn(db, { now: options.now });
      const store: InventoryStore = { ...inPlace, close: async () => void db.close() };
      connections.set(store, db);
      return store;
    },
    faults(store) {
      const db = connections.get(store);
      if (!db) throw new Error('faults need a store this target opened with the inline writer');
      return faultsOn(db);
    },
    tamper: {
      async deleteNewestEvent(path) {
        let seq = 0;
        withRaw(path, (raw) => {
          raw.exec('DROP TRIGGER IF EXISTS events_no_delete');
          seq = raw.prepare('SELECT max(seq) FROM events').pluck().get() as number;
          raw.prepare('DELETE FROM events WHERE seq = ?').run(seq);
        });
        return seq;
      },
      async asOwner(path, sql) {
        withRaw(path, (raw) => raw.exec(sql));
      },
      async pastGuards(path, sql) {
        // The triggers come back afterwards, as PostgreSQL's do: the tampering is past
        // them, not their removal (a missing trigger is a finding of its own).
        withRaw(path, (raw) => {
          const triggers = raw.prepare("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'").all() as {
            name: string;
            sql: string;
          }[];
          for (const { name } of triggers) raw.exec(`DROP TRIGGER "${name}"`);
          try {
            raw.exec(sql);
          } finally {
            for (const trigger of triggers) raw.exec(trigger.sql);
          }
        });
      },
      async failCommitsOf(path, requestId) {
        // A deferred foreign key that an insert of that request breaks: checked at COMMIT.
        withRaw(path, (raw) =>
          raw.exec(`
            CREATE TABLE IF NOT EXISTS doom_parent (id INTEGER PRIMARY KEY);
            CREATE TABLE IF NOT EXISTS doom_child (parent_id INTEGER REFERENCES doom_parent (id) DEFERRABLE INITIALLY DEFERRED);
            CREATE TRIGGER doom AFTER INSERT ON events WHEN NEW.request_id = '${requestId.replaceAll("'", "''")}'
            BEGIN INSERT INTO doom_child VALUES (404); END;`),
        );
      },
    },
  };
}
