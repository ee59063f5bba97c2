// The PostgreSQL target: a fresh database per test on the server the test run started
// (scripts/test-run.ts), the port over it through the adapter, and faults made the way
// PostgreSQL reports them: triggers that raise the server's own error codes (a full disk
// is 53100 disk_full, a read-only database 25006), undone by dropping them.
import pg from 'pg';
import type { InventoryStore } from '../../src/store/port.ts';
import { openPostgresStore } from '../../src/store/postgres/store.ts';
import { freshPostgresDatabase } from './postgres-server.ts';
import type { StoreFaults, StoreTarget } from './stores.ts';

/** Runs sql on the database as the server's superuser, as someone with direct access could. */
async function asSuperuser<T>(url: string, run: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}

const quote = (text: string) => `'${text.replaceAll("'", "''")}'`;

function faultsOn(url: string, pool: pg.Pool): StoreFaults {
  return {
    async fillDisk(roomBytes = 0) {
      // The room left, in bytes of event rows; an insert past it fails as a full disk does
      // (53100), and a rolled-back transaction gives its bytes back, as on a real disk.
      await asSuperuser(url, (c) =>
        c.query(`
          CREATE TABLE test_disk_room (bytes bigint NOT NULL);
          INSERT INTO test_disk_room VALUES (${Math.floor(roomBytes)});
          CREATE FUNCTION test_disk_full() RETURNS trigger LANGUAGE plpgsql AS $$
          DECLARE left_over bigint;
          BEGIN
            UPDATE test_disk_room SET bytes = bytes - octet_length(NEW::text) RETURNING bytes INTO left_over;
            IF left_over < 0 THEN RAISE EXCEPTION 'could not extend file: No space left on device' USING ERRCODE = 'disk_full'; END IF;
            RETURN NEW;
          END $$;
          CREATE TRIGGER test_disk_full BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION test_disk_full();
          CREATE TRIGGER test_disk_full BEFORE INSERT ON service_health FOR EACH ROW EXECUTE FUNCTION test_disk_full();`),
      );
      return () =>
        asSuperuser(url, (c) => c.query('DROP FUNCTION test_disk_full() CASCADE; DROP TABLE test_disk_room')).then(() => undefined);
    },
    diskFullCode: '53100',
    async readOnly() {
      await asSuperuser(url, (c) =>
        c.query(`
          CREATE FUNCTION test_read_only() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN RAISE EXCEPTION 'cannot execute % in a read-only transaction', TG_OP USING ERRCODE = 'read_only_sql_transaction'; END $$;
          ${['events', 'inventory', 'api_keys', 'service_health']
            .map(
              (t) =>
                `CREATE TRIGGER test_read_only BEFORE INSERT OR UPDATE OR DELETE ON ${t} FOR EACH STATEMENT EXECUTE FUNCTION test_read_only();`,
            )
            .join('\n')}`),
      );
      return () => asSuperuser(url, (c) => c.query('DROP FUNCTION test_read_only() CASCADE')).then(() => undefined);
    },
    async dropProjection() {
      await asSuperuser(url, (c) => c.query('ALTER TABLE inventory RENAME TO inventory_gone'));
      const undo = () => asSuperuser(url, (c) => c.query('ALTER TABLE inventory_gone RENAME TO inventory')).then(() => undefined);
      return { undo, driverMessage: /relation \\?"inventory\\?" does not exist/ };
    },
    // A transaction holds a pooled connection until COMMIT or ROLLBACK.
    inTransaction: () => pool.totalCount > pool.idleCount,
  };
}

export function postgresTarget(): StoreTarget {
  const opened = new WeakMap<InventoryStore, { url: string; pool: pg.Pool }>();
  return {
    name: 'postgres',
    async fresh() {
      const database = await freshPostgresDatabase();
      return { db: database.url, cleanup: () => database.cleanup() };
    },
    async open(url, options = {}) {
      let pool: pg.Pool | undefined;
      const store = await openPostgresStore(url, {
        now: options.now,
        readonly: options.readonly,
        // As the service opens it, unless the test opens it read-only as a reading command.
        service: !options.readonly,
        inspectPool: (p) => (pool = p),
      });
      opened.set(store, { url, pool: pool! });
      return store;
    },
    faults(store) {
      const found = opened.get(store);
      if (!found) throw new Error('faults need a store this target opened');
      return faultsOn(found.url, found.pool);
    },
    tamper: {
      async deleteNewestEvent(url) {
        return asSuperuser(url, async (c) => {
          // Triggers off for this session only (superuser), as an attacker with full rights could.
          await c.query('SET session_replication_role = replica');
          const { rows } = await c.query<{ seq: string }>(
            'DELETE FROM events WHERE seq = (SELECT max(seq) FROM events) RETURNING seq::text',
          );
          return Number(rows[0]!.seq);
        });
      },
      async asOwner(url, sql) {
        await asSuperuser(url, (c) => c.query(sql));
      },
      async pastGuards(url, sql) {
        await asSuperuser(url, (c) => c.query(`SET session_replication_role = replica; ${sql}`));
      },
      async failCommitsOf(url, requestId) {
        // A constraint trigger deferred to COMMIT: every statement succeeds, the commit fails.
        await asSuperuser(url, (c) =>
          c.query(`
            CREATE FUNCTION test_doom() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN RAISE EXCEPTION 'doomed at commit' USING ERRCODE = 'integrity_constraint_violation'; END $$;
            CREATE CONSTRAINT TRIGGER test_doom AFTER INSERT ON events DEFERRABLE INITIALLY DEFERRED
            FOR EACH ROW WHEN (NEW.request_id = ${quote(requestId)}) EXECUTE FUNCTION test_doom();`),
        );
      },
    },
  };
}
