// What docs/auditors.md teaches with its example, as behaviour of the example database
// (test/kit/auditors-guide.ts) and the service: a naive time bound misses events that a
// normalized one finds, a request id that looks like a formula is kept as sent, and the
// revoked key's query lists the adjustments made after the revocation.
import pg from 'pg';
import * as assert from 'uvu/assert';
import { openStore } from '../kit/stores.ts';
import { tempDir } from '../kit/paths.ts';
import { freshPostgresDatabase } from '../kit/postgres-server.ts';
import { withFile } from '../kit/tamper.ts';
import { startApp } from '../kit/app.ts';
import { buildExample, pageText, blocks, sqliteRows, postgresRows } from '../kit/auditors-guide.ts';
import { suite } from 'uvu';

const test = suite("the auditors' guide: what its text states");

test('in the example, a naive time bound misses events a normalized one finds', async () => {
  const [time, naive, normalized] = ['2026-11-21T18:57:41Z', '2', '6'];
  const scratch = tempDir('auditors-guide-');
  try {
    const db = scratch.path('inventory.db');
    await buildExample(db);
    const count = (sql: string) => sqliteRows(db, sql).rows[0]![0];
    assert.is(count(`SELECT count(*) FROM events WHERE recorded_at >= '${time}'`), naive);
    assert.is(count(`SELECT count(*) FROM events WHERE recorded_at >= strftime('%Y-%m-%dT%H:%M:%fZ', '${time}')`), normalized);
  } finally {
    scratch.cleanup();
  }
});

test('a request id that a spreadsheet would take for a formula is one the service keeps', async () => {
  const called = ['-2-3'];
  const t = await startApp();
  try {
    for (const id of called) {
      const res = await t.get('/v1/inventory', { 'X-Request-Id': id });
      assert.is(res.headers['x-request-id'], id, `the service keeps the request id ${id}`);
    }
  } finally {
    await t.close();
  }
});

test("the revoked key's query lists the adjustments a key made after its revocation in the key log, on both stores", async () => {
  const block = blocks(pageText()).find((b) => b.text.includes('a.recorded_at > r.recorded_at'));
  assert.ok(block, 'the page has the query');
  const sql = /"\n([\s\S]*)"\s*$/.exec(block.text)![1]!;
  const scratch = tempDir('auditors-guide-');
  const postgres = await freshPostgresDatabase();
  try {
    const db = scratch.path('inventory.db');
    // The same example on each store, then a revocation entered in the key log between
    // seq 9 (18:57:41.282Z) and seq 10 (18:57:41.290Z), as if it had been back-dated there:
    // the two adjustments of store-front after it are listed.
    for (const target of [db, postgres.url]) {
      await buildExample(target);
      const store = await openStore(target, { now: () => Date.parse('2026-11-21T18:57:41.285Z') });
      try {
        assert.equal(
          (await store.keyHistory()).events.filter(([, type]) => type === 'KeyRevoked'),
          [],
          'no revocation in the example',
        );
        assert.is(await store.keys.revoke('store-front', 'cli:root'), 'revoked');
      } finally {
        await store.close();
      }
    }
    const rows = sqliteRows(db, sql);
    assert.equal(
      rows.rows.map((r) => [r[0], r[6], r[7], r[8]]),
      [
        ['10', 'store-front', '2026-11-21T18:57:41.285Z', 'cli:root'],
        ['11', 'store-front', '2026-11-21T18:57:41.285Z', 'cli:root'],
      ],
    );
    // api_keys plays no part: set back behind the triggers, the key log still says.
    withFile(db, (raw) => {
      raw.exec('DROP TRIGGER api_keys_revocation_only; DROP TRIGGER api_keys_revoked_chained');
      raw.exec("UPDATE api_keys SET revoked_at = NULL, revoked_by = NULL WHERE name = 'store-front'");
    });
    assert.equal(sqliteRows(db, sql), rows, 'the same rows with api_keys changed');
    const client = new pg.Client({ connectionString: postgres.url });
    await client.connect();
    try {
      assert.equal(await postgresRows(client, sql), rows, 'the same rows on PostgreSQL, unchanged');
    } finally {
      await client.end();
    }
  } finally {
    await postgres.cleanup();
    scratch.cleanup();
  }
});

test.run();
