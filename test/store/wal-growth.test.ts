// A long-open read transaction pins the write-ahead log: it grows with every write.
// Once the reader is gone the log must come back to a few MB by itself, even when no
// further write comes; readiness shows the log's size and how long checkpoints have
// been held back. And the audit listing reads page by page, so a slow consumer of its
// output pins nothing.
import { setTimeout as sleep } from 'node:timers/promises';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import Database from 'better-sqlite3';
import { commandsFor } from '../../src/application/write/commands.ts';
import type { Command } from '../../src/domain/decide.ts';
import { openDatabase, WAL_LIMIT_BYTES } from '../../src/store/sqlite/database.ts';
import type { StorageStatus } from '../../src/store/health.ts';
import { openSqliteStore } from '../../src/store/sqlite/store.ts';
import { walBytes } from '../../src/store/sqlite/wal-keeper.ts';
import { startApp } from '../kit/app.ts';
import type { ItemBody } from '../kit/http.ts';
import { tempDir } from '../kit/paths.ts';

const wal = suite('the write-ahead log (SQLite only: its WAL file)');

const PETS = 50;
const setAll = (round: number): Command[] =>
  Array.from({ length: PETS }, (_, i) => ({ type: 'SetQuantity', petId: BigInt(100 + i), quantity: round % 1000 }));

async function storage(get: (path: string) => Promise<{ status: number; json(): unknown }>): Promise<StorageStatus> {
  const ready = await get('/readyz');
  assert.is(ready.status, 200);
  return (ready.json() as { storage: StorageStatus }).storage;
}

wal('behind an open reader it grows; once the reader is gone it is back under the limit within seconds, with no write', async () => {
  const app = await startApp({ writer: 'thread' });
  await app.track(7, 1);
  const path = app.db;
  const reader = new Database(path, { readonly: true });
  try {
    const commands = commandsFor(app.store);
    const meta = { actor: 'cli:test', requestId: 'wal' };
    await commands.handleAll(
      Array.from({ length: PETS }, (_, i) => ({ type: 'TrackPet', petId: BigInt(100 + i), quantity: 0, status: 'available' })),
      meta,
    );
    // The reader's transaction starts here and stays open.
    reader.exec('BEGIN');
    reader.prepare('SELECT count(*) FROM events').pluck().get();
    const started = Date.now();
    let writes = 0;
    for (let round = 1; round <= 400 && walBytes(path) <= 2 * WAL_LIMIT_BYTES && Date.now() - started < 60_000; round++) {
      await commands.handleAll(setAll(round), meta);
      writes += PETS;
    }
    assert.ok(walBytes(path) > WAL_LIMIT_BYTES, `the log grew past the limit (${walBytes(path)} bytes after ${writes} writes)`);
    // Idle now: the writer's checkpoints are held back by the reader, and readiness says so.
    await sleep(800);
    const pinned = await storage((p) => app.get(p));
    assert.ok(pinned.walBytes > WAL_LIMIT_BYTES);
    assert.is(pinned.walLimitBytes, WAL_LIMIT_BYTES);
    assert.type(pinned.walCheckpointBlockedForMs, 'number', 'checkpoints are held back');
    assert.ok(walBytes(path) > WAL_LIMIT_BYTES, 'still pinned while the reader reads');

    reader.exec('COMMIT');
    const closedAt = Date.now();
    // The writer thread truncates the log and then clears its hold-up mark: this thread can
    // see the first before the second, so both are awaited within the same 5 s.
    let freed = await storage((p) => app.get(p));
    while ((walBytes(path) > WAL_LIMIT_BYTES || freed.walCheckpointBlockedForMs !== null) && Date.now() - closedAt < 5000) {
      await sleep(100);
      freed = await storage((p) => app.get(p));
    }
    assert.ok(walBytes(path) <= WAL_LIMIT_BYTES, `back under the limit within 5 s without a write (${walBytes(path)} bytes)`);
    assert.is(freed.walCheckpointBlockedForMs, null);
    assert.ok(freed.walBytes <= WAL_LIMIT_BYTES);
    // Nothing was lost on the way.
    assert.equal((await app.get('/v1/inventory')).json<ItemBody[]>().length, PETS + 1, 'every pet is still listed');
  } finally {
    reader.close();
    await app.close();
  }
});

wal('the audit listing reads in short transactions: a consumer that stops between pages does not hold back a checkpoint', async () => {
  const dir = tempDir('inv-audit-wal-');
  const path = dir.path('inventory.db');
  const writerDb = openDatabase(path);
  const writing = await openSqliteStore(path);
  const auditing = await openSqliteStore(path, { readonly: true });
  try {
    const commands = commandsFor(writing);
    const meta = { actor: 'cli:test', requestId: 'audit' };
    await commands.handleAll(
      Array.from({ length: PETS }, (_, i) => ({ type: 'TrackPet', petId: BigInt(100 + i), quantity: 0, status: 'available' })),
      meta,
    );
    for (let round = 1; round <= 12; round++) await commands.handleAll(setAll(round), meta);

    const pages = auditing.stockAdjustments({})[Symbol.asyncIterator]();
    const first = await pages.next();
    assert.not.ok(first.done);
    // The consumer is slow: while it holds its first page, the log moves on and a
    // checkpoint that needs every reader gone completes.
    await commands.handleAll(setAll(13), meta);
    writerDb.pragma('busy_timeout = 0');
    const [result] = writerDb.pragma('wal_checkpoint(TRUNCATE)') as { busy: number }[];
    assert.is(result!.busy, 0, 'no read transaction spans the listing');

    let rows = (first.value as unknown[]).length;
    for (let next = await pages.next(); !next.done; next = await pages.next()) rows += next.value.length;
    assert.is(rows, PETS * 13, 'every adjustment listed, the ones written meanwhile too');
  } finally {
    await auditing.close();
    await writing.close();
    writerDb.close();
    dir.cleanup();
  }
});

wal.run();
