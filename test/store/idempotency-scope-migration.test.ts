// Upgrading a database whose Idempotency-Keys were scoped to the path too: the records of
// one API key that share a key (on several pets) become one, the newest, which a retry of
// that key finds; records of other keys and other API keys are kept as they were. On
// every store, from the schema version before the change.
import Database from 'better-sqlite3';
import pg from 'pg';
import * as assert from 'uvu/assert';
import { postgresMigrations, migratePostgres } from '../../src/store/postgres/schema.ts';
import { loadMigrations, migrate } from '../../src/store/sqlite/migrate.ts';
import { tempDir } from '../kit/paths.ts';
import { freshPostgresDatabase } from '../kit/postgres-server.ts';
import { execute, query, type OnDatabase } from '../kit/sql.ts';
import { targetSuites } from '../kit/suites.ts';
import type { IdempotencyRecord } from '../../src/store/idempotency.ts';

/** The first migration of each store that scopes keys to the API key alone. */
const SQLITE_SCOPE = 9;
const POSTGRES_SCOPE = 4;

const upgrade = targetSuites<{ on: OnDatabase; cleanup: () => Promise<void> }>('Idempotency-Key scope: upgrading', {
  async beforeEach(ctx) {
    if (ctx.target.name === 'sqlite') {
      const scratch = tempDir('inventory-scope-');
      ctx.on = { target: { name: 'sqlite' }, db: scratch.path('inventory.db') };
      const db = new Database(ctx.on.db);
      try {
        migrate(
          db,
          loadMigrations().filter((m) => m.version < SQLITE_SCOPE),
        );
      } finally {
        db.close();
      }
      ctx.cleanup = () => Promise.resolve(scratch.cleanup());
    } else {
      const database = await freshPostgresDatabase();
      ctx.on = { target: { name: 'postgres' }, db: database.url };
      const pool = new pg.Pool({ connectionString: database.url });
      try {
        await migratePostgres(
          pool,
          'the test database',
          postgresMigrations().filter((m) => m.version < POSTGRES_SCOPE),
        );
      } finally {
        await pool.end();
      }
      ctx.cleanup = () => database.cleanup();
    }
  },
  async afterEach(ctx) {
    await ctx.cleanup();
  },
});

const FUTURE = '2999-01-01T00:00:00.000Z';

upgrade('one record per API key and key, the newest kept; a retry finds it', async ({ target, on }) => {
  const row = (apiKey: string, path: string, key: string, createdAt: string) =>
    `('${apiKey}', '${path}', '${key}', 'f-${path}', 200, '"1"', '{"from":"${path}"}', '${createdAt}', '${FUTURE}')`;
  await execute(
    on,
    `INSERT INTO idempotency_keys (api_key, path, idempotency_key, fingerprint, status, etag, body, created_at, expires_at) VALUES
     ${[
       row('shop', '/v1/inventory/1', 'k', '2026-01-01T00:00:00.000Z'),
       row('shop', '/v1/inventory/3', 'k', '2026-01-03T00:00:00.000Z'),
       row('shop', '/v1/inventory/2', 'k', '2026-01-02T00:00:00.000Z'),
       row('shop', '/v1/inventory/1', 'other', '2026-01-01T00:00:00.000Z'),
       row('till', '/v1/inventory/1', 'k', '2026-01-01T00:00:00.000Z'),
     ].join(',\n')};`,
  );
  const store = await target.open(on.db);
  try {
    const rows = await query<{ api_key: string; idempotency_key: string; path: string }>(
      on,
      'SELECT api_key, idempotency_key, path FROM idempotency_keys ORDER BY api_key, idempotency_key',
    );
    assert.equal(
      rows.map((r) => [r.api_key, r.idempotency_key, r.path]),
      [
        ['shop', 'k', '/v1/inventory/3'],
        ['shop', 'other', '/v1/inventory/1'],
        ['till', 'k', '/v1/inventory/1'],
      ],
    );
    const found = (await store.idempotency.find({ apiKey: 'shop', key: 'k' }, '2026-06-01T00:00:00.000Z')) as IdempotencyRecord | undefined;
    assert.is(found?.path, '/v1/inventory/3');
    assert.is(found?.body, '{"from":"/v1/inventory/3"}');
  } finally {
    await store.close();
  }
  // The table takes one record per API key and key from now on.
  let refused = false;
  await execute(
    on,
    `INSERT INTO idempotency_keys (api_key, path, idempotency_key, fingerprint, status, etag, body, created_at, expires_at) VALUES ${row('shop', '/v1/inventory/9', 'other', '2026-02-01T00:00:00.000Z')}`,
  ).catch((err: Error) => {
    refused = /unique|duplicate/i.test(err.message);
    if (!refused) throw err;
  });
  assert.ok(refused, 'a second record of one key is refused by the table');
});

upgrade.run();
