// SQLite: a COMMIT that fails with an I/O error (the sync of the log failed) leaves the
// outcome unknown, since its frames may be whole in the -wal file: it is
// CommitUnconfirmed (answered 503 commit_unconfirmed), never "nothing was written", and
// the outcome is looked up afterwards. Any other failure of COMMIT rolls back. SQLite
// offers no way to make a sync fail on demand, so the connection here is the real one
// with its COMMIT step replaced: the batch's body runs for real, is rolled back, and the
// COMMIT throws the error a failing disk gives.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { makeCommandHandler, type CommitOutcomeReport } from '../../src/application/write/commands.ts';
import { openDatabase, type Db } from '../../src/store/sqlite/database.ts';
import { CommitUnconfirmed, type Submission } from '../../src/store/event-log.ts';
import { sqliteStoreOn } from '../../src/store/sqlite/store.ts';
import { makeWriter } from '../../src/store/sqlite/writer/writer.ts';
import { trackPets } from '../kit/fixtures.ts';
import { tempDir, type TempDir } from '../kit/paths.ts';

/** The connection, with the COMMIT of every IMMEDIATE transaction failing with code. */
function failingCommits(db: Db, code: string): Db {
  const transaction = db.transaction.bind(db);
  return new Proxy(db, {
    get(target, property) {
      if (property === 'transaction') {
        return (fn: (...args: unknown[]) => unknown) => {
          const real = transaction(fn);
          const wrapped = Object.assign((...args: unknown[]) => real(...args), {
            immediate: (...args: unknown[]) => {
              target.exec('BEGIN IMMEDIATE');
              try {
                real(...args);
              } finally {
                target.exec('ROLLBACK');
              }
              throw Object.assign(new Error('disk I/O error'), { code });
            },
          });
          return wrapped;
        };
      }
      const value = Reflect.get(target, property, target) as unknown;
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

function setQuantity(quantity: number): Submission {
  return {
    meta: { actor: 'tester', requestId: `set-${quantity}` },
    recordedAt: '2026-01-02T03:04:05.678Z',
    appends: [{ petId: 1n, expectedVersion: 1, events: [{ type: 'QuantitySet', data: { quantity } }] }],
  };
}

const unknown = suite<{ dir: TempDir; db: Db }>('SQLite: a COMMIT whose result is unknown');
unknown.before.each(async (ctx) => {
  ctx.dir = tempDir('commit-unknown-');
  ctx.db = openDatabase(ctx.dir.path('inventory.db'));
  await trackPets(sqliteStoreOn(ctx.db), [{ petId: 1n, quantity: 1 }]);
});
unknown.after.each((ctx) => {
  ctx.db.close();
  ctx.dir.cleanup();
});

unknown('an I/O error at COMMIT is CommitUnconfirmed, naming where the batch would have left the chain', async (ctx) => {
  const writer = makeWriter(failingCommits(ctx.db, 'SQLITE_IOERR_FSYNC'));
  let caught: unknown;
  try {
    writer.appendBatch([setQuantity(5)]);
  } catch (error) {
    caught = error;
  }
  assert.instance(caught, CommitUnconfirmed);
  const { batch } = caught as CommitUnconfirmed;
  assert.is(batch.seq, 2n, 'the seq its event would have');
  assert.match(batch.hash ?? '', /^[0-9a-f]{64}$/);
  // Looked up afterwards: this one was rolled back.
  const store = sqliteStoreOn(ctx.db);
  assert.is(await store.commitOutcome(batch), 'not committed');
  // The same batch committed for real is found by the same look-up.
  const [outcome] = makeWriter(ctx.db).appendBatch([setQuantity(5)]);
  assert.ok(outcome?.ok);
  assert.is(await store.commitOutcome(batch), 'committed', 'the same seq and hash, now in the log');
});

unknown('any other failure of COMMIT is a failure: nothing was written', (ctx) => {
  const writer = makeWriter(failingCommits(ctx.db, 'SQLITE_FULL'));
  assert.throws(
    () => writer.appendBatch([setQuantity(5)]),
    (e: unknown) => !(e instanceof CommitUnconfirmed) && (e as { code?: string }).code === 'SQLITE_FULL',
  );
});

unknown('through the command handler: the request gets CommitUnconfirmed and its outcome is reported', async (ctx) => {
  const reports: CommitOutcomeReport[] = [];
  const commands = makeCommandHandler({
    store: sqliteStoreOn(failingCommits(ctx.db, 'SQLITE_IOERR_FSYNC')),
    now: () => Date.parse('2026-01-02T03:04:05.678Z'),
    onCommitOutcome: (report) => reports.push(report),
  });
  let caught: unknown;
  try {
    await commands.handle({ type: 'SetQuantity', petId: 1n, quantity: 9 }, { actor: 'tester', requestId: 'unsure' });
  } catch (error) {
    caught = error;
  }
  assert.instance(caught, CommitUnconfirmed);
  for (let i = 0; i < 100 && reports.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 10));
  assert.equal(reports, [{ requestIds: ['unsure'], outcome: 'not committed' }]);
});

unknown.run();
