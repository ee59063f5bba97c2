// Group commit: appends submitted in one turn of the event loop share one transaction;
// each gets its own result; nobody is answered before the commit; a failed commit
// fails exactly the appends in it and leaves nothing behind.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { appliedEntry, makeCommandHandler, type CommandHandler } from '../../src/application/write/commands.ts';
import { CommitFailed } from '../../src/application/write/group-commit.ts';
import { VersionConflict } from '../../src/store/event-log.ts';
import type { InventoryStore } from '../../src/store/port.ts';
import { entriesOf, type EventRow, eventsOf, lastSeqOf } from '../kit/fixtures.ts';
import { assertErrorShape } from '../kit/http.ts';
import { openDatabase } from '../../src/store/sqlite/database.ts';
import { openSqliteStore } from '../../src/store/sqlite/store.ts';
import { tempDir, type TempDir } from '../kit/paths.ts';
import { appSuite, targetSuites, type OnTarget } from '../kit/suites.ts';

interface Ctx {
  db: string;
  cleanup: () => Promise<void>;
  store: InventoryStore;
  commands: CommandHandler;
  commits: number[];
  onCommit: (() => void) | undefined;
}

const meta = (requestId: string) => ({ actor: 'k', requestId });
const at = (version: number) => (v: number) => (v === version ? undefined : 'if-match-failed');

/** Request id and version of the events that keep() picks, in log order. */
async function written(store: InventoryStore, keep: (e: EventRow) => boolean) {
  return (await eventsOf(store)).filter(keep).map((e) => ({ requestId: e.requestId, version: e.version }));
}

/** A store that lets another writer (its own store on the same database, as another
 * process) commit to pet 1 before the appends whose numbers race() picks. */
async function racingStore(ctx: Ctx & OnTarget, race: (call: number) => boolean) {
  const otherStore = await ctx.target.open(ctx.db);
  const other = makeCommandHandler({ store: otherStore, now: Date.now });
  const batches: number[] = [];
  const racing: InventoryStore = {
    ...ctx.store,
    async appendBatch(submissions) {
      batches.push(submissions.length);
      if (race(batches.length)) {
        await other
          .handle({ type: 'SetQuantity', petId: 1n, quantity: 50 + batches.length }, meta(`other-${batches.length}`))
          .then(appliedEntry);
      }
      return ctx.store.appendBatch(submissions);
    },
  };
  return { racing, batches, close: () => otherStore.close() };
}

const batch = targetSuites<Ctx>('group commit', {
  async beforeEach(ctx) {
    const fresh = await ctx.target.fresh();
    ctx.db = fresh.db;
    ctx.cleanup = fresh.cleanup;
    ctx.store = await ctx.target.open(fresh.db);
    ctx.commits = [];
    ctx.onCommit = undefined;
    ctx.commands = makeCommandHandler({
      store: ctx.store,
      now: Date.now,
      onCommit: (items) => {
        ctx.commits.push(items);
        ctx.onCommit?.();
      },
    });
    await ctx.commands.handleAll(
      [1n, 2n].map((petId) => ({ type: 'TrackPet' as const, petId, quantity: 0, status: 'available' as const })),
      meta('seed'),
    );
    ctx.commits.length = 0;
  },
  async afterEach(ctx) {
    await ctx.store.close();
    await ctx.cleanup();
  },
});

batch('appends of one turn share one commit; each gets its own result, in arrival order', async (ctx) => {
  const settled = await Promise.allSettled([
    ctx.commands.handle({ type: 'SetQuantity', petId: 1n, quantity: 10 }, meta('a')).then(appliedEntry),
    ctx.commands.handle({ type: 'SetQuantity', petId: 99n, quantity: 1 }, meta('b')),
    ctx.commands.handle({ type: 'SetQuantity', petId: 1n, quantity: 11 }, meta('c')).then(appliedEntry),
    ctx.commands.handle({ type: 'SetQuantity', petId: 2n, quantity: 5, precondition: at(7) }, meta('d')),
    ctx.commands.handle({ type: 'SetQuantity', petId: 2n, quantity: 6, precondition: at(1) }, meta('e')).then(appliedEntry),
    ctx.commands.handle({ type: 'SetQuantity', petId: 1n, quantity: 12, precondition: at(3) }, meta('f')).then(appliedEntry),
  ]);
  assert.equal(ctx.commits, [6], 'one commit for the whole turn');
  const [a, b, c, d, e, f] = settled;
  assert.ok(a.status === 'fulfilled' && a.value.quantity === 10 && a.value.version === 2);
  assert.ok(b.status === 'fulfilled' && b.value.kind === 'refused' && b.value.refusal.reason === 'not_tracked');
  assert.ok(c.status === 'fulfilled' && c.value.version === 3, 'the second write to pet 1 sees the first');
  assert.ok(d.status === 'fulfilled' && d.value.kind === 'refused' && d.value.refusal.reason === 'precondition_failed');
  assert.ok(e.status === 'fulfilled' && e.value.version === 2);
  assert.ok(f.status === 'fulfilled' && f.value.version === 4, 'its precondition saw version 3, from c in the same batch');
  assert.equal(await written(ctx.store, (ev) => ev.requestId !== 'seed'), [
    { requestId: 'a', version: 2n },
    { requestId: 'c', version: 3n },
    { requestId: 'e', version: 2n },
    { requestId: 'f', version: 4n },
  ]);
});

batch('nobody is answered before the commit', async (ctx) => {
  const answered: string[] = [];
  let answeredAtCommit: string[] | undefined;
  const faults = ctx.target.faults(ctx.store);
  ctx.onCommit = () => {
    answeredAtCommit = [...answered];
    assert.ok(!faults.inTransaction(), 'the transaction is committed when onCommit runs');
  };
  await Promise.allSettled(
    ['x', 'y', 'z'].map((id, i) =>
      ctx.commands
        .handle({ type: 'SetQuantity', petId: i === 1 ? 99n : 1n, quantity: i }, meta(id))
        .then(appliedEntry)
        .finally(() => answered.push(id)),
    ),
  );
  assert.equal(answeredAtCommit, [], 'no answer, success or refusal, came before the commit');
  assert.is(answered.length, 3);
});

batch('a failed commit fails exactly the appends in it, and leaves nothing', async (ctx) => {
  // The commit of any batch holding a request with id "doomed" fails, after every
  // statement succeeded.
  await ctx.target.tamper.failCommitsOf(ctx.db, 'doomed');
  const before = (await eventsOf(ctx.store)).length;
  const inventoryBefore = await entriesOf(ctx.store);
  const first = await Promise.allSettled([
    ctx.commands.handle({ type: 'SetQuantity', petId: 1n, quantity: 5 }, meta('ok-1')).then(appliedEntry),
    ctx.commands.handle({ type: 'SetQuantity', petId: 2n, quantity: 6 }, meta('doomed')).then(appliedEntry),
    ctx.commands.handle({ type: 'SetQuantity', petId: 99n, quantity: 7 }, meta('refused')).then(appliedEntry),
  ]);
  assert.ok(first.every((r) => r.status === 'rejected'));
  assert.ok(first[0].status === 'rejected' && first[0].reason instanceof CommitFailed);
  assert.ok(first[1].status === 'rejected' && first[1].reason instanceof CommitFailed);
  assert.is((await eventsOf(ctx.store)).length, before, 'no event of the batch remains');
  assert.equal(await entriesOf(ctx.store), inventoryBefore, 'no row changed');
  assert.equal(ctx.commits, [], 'nothing was reported committed');
  // The next batch, without the doomed request, commits normally.
  const next = await ctx.commands.handle({ type: 'SetQuantity', petId: 1n, quantity: 5 }, meta('ok-2')).then(appliedEntry);
  assert.is(next.version, 2);
});

batch('a full disk mid-batch: each append is whole or absent, and the service recovers', async (ctx) => {
  const faults = ctx.target.faults(ctx.store);
  const spaceBack = await faults.fillDisk(8192);
  const before = (await eventsOf(ctx.store)).length;
  const results = await Promise.allSettled(
    Array.from({ length: 20 }, (_, i) =>
      ctx.commands.handle({ type: 'SetQuantity', petId: 1n, quantity: i }, meta(`full-${i}-`.padEnd(2000, 'x'))).then(appliedEntry),
    ),
  );
  const ok = results.filter((r) => r.status === 'fulfilled').length;
  const full = results.filter((r) => r.status === 'rejected' && ctx.store.fault(r.reason)?.code === faults.diskFullCode);
  assert.ok(ok > 0 && full.length > 0, `some fit, some did not: ${ok} ok, ${full.length} full`);
  assert.is(ok + full.length, 20, 'every failure is the full disk');
  assert.is((await eventsOf(ctx.store)).length, before + ok, 'exactly the acknowledged appends');
  assert.is((await ctx.store.loadEntries([1n])).get(1n)?.version, 1 + ok, 'the projection agrees');
  assert.ok(!faults.inTransaction());
  await spaceBack();
  assert.is((await ctx.commands.handle({ type: 'SetQuantity', petId: 1n, quantity: 3 }, meta('after')).then(appliedEntry)).version, 2 + ok);
});

batch('another writer between load and append: the store reports a conflict, the command is decided again', async (ctx) => {
  // Another process commits to pet 1 after this batch loaded it.
  const { racing, batches, close } = await racingStore(ctx, (call) => call === 1);
  try {
    const commands = makeCommandHandler({ store: racing, now: Date.now });
    const [plain, guarded] = await Promise.allSettled([
      commands.handle({ type: 'SetQuantity', petId: 1n, quantity: 7 }, meta('plain')).then(appliedEntry),
      commands.handle({ type: 'SetQuantity', petId: 2n, quantity: 8, precondition: at(1) }, meta('guarded')).then(appliedEntry),
    ]);
    assert.is(batches.length, 2, 'the conflicting submission went to a second batch');
    assert.ok(
      plain.status === 'fulfilled' && plain.value.version === 3 && plain.value.quantity === 7,
      'decided again on top of the other write',
    );
    assert.ok(guarded.status === 'fulfilled' && guarded.value.version === 2, 'pet 2 was untouched by the conflict');
    assert.equal(await written(ctx.store, (e) => e.petId === 1n && e.requestId !== 'seed'), [
      { requestId: 'other-1', version: 2n },
      { requestId: 'plain', version: 3n },
    ]);
  } finally {
    await close();
  }
});

batch('a precondition is judged again on the reloaded entry after a conflict', async (ctx) => {
  const { racing, close } = await racingStore(ctx, (call) => call === 1);
  try {
    const commands = makeCommandHandler({ store: racing, now: Date.now });
    const refused = await commands.handle({ type: 'SetQuantity', petId: 1n, quantity: 7, precondition: at(1) }, meta('stale'));
    assert.ok(
      refused.kind === 'refused' && refused.refusal.reason === 'precondition_failed',
      'If-Match "1" no longer holds: 412, not a lost update',
    );
    assert.is(refused.refusal.currentVersion, 2);
    assert.equal(await written(ctx.store, (e) => e.requestId === 'stale'), []);
  } finally {
    await close();
  }
});

batch("later commands on a pet share a conflicting earlier one's fate, and chain again when retried", async (ctx) => {
  const { racing, batches, close } = await racingStore(ctx, (call) => call === 1);
  try {
    const commands = makeCommandHandler({ store: racing, now: Date.now });
    // b is decided against a's result (version 2); after the other write both are stale,
    // and b's expected version (2) happens to be the log's: only sharing a's fate stops it.
    const [a, b] = await Promise.all([
      commands.handle({ type: 'SetQuantity', petId: 1n, quantity: 10 }, meta('a')).then(appliedEntry),
      commands.handle({ type: 'SetQuantity', petId: 1n, quantity: 11 }, meta('b')).then(appliedEntry),
    ]);
    assert.equal(batches, [2, 2], 'both went again, together');
    assert.is(a.version, 3);
    assert.is(b.version, 4, "b was decided again against a's new result");
    assert.is((await ctx.store.loadEntries([1n])).get(1n)?.quantity, 11);
    assert.equal(await written(ctx.store, (e) => e.petId === 1n && e.requestId !== 'seed'), [
      { requestId: 'other-1', version: 2n },
      { requestId: 'a', version: 3n },
      { requestId: 'b', version: 4n },
    ]);
  } finally {
    await close();
  }
});

batch('retries are bounded: a pet that others keep writing fails with CommitFailed (503)', async (ctx) => {
  const { racing, batches, close } = await racingStore(ctx, () => true);
  try {
    const commands = makeCommandHandler({ store: racing, now: Date.now, retry: { attempts: 3, minTimeoutMs: 0, factor: 2 } });
    const failed = await commands
      .handle({ type: 'SetQuantity', petId: 1n, quantity: 7 }, meta('starved'))
      .then(appliedEntry)
      .catch((e: unknown) => e);
    assert.ok(failed instanceof CommitFailed, String(failed));
    assert.ok(failed.cause instanceof VersionConflict);
    assert.is(batches.length, 3);
    assert.equal(await written(ctx.store, (e) => e.requestId === 'starved'), []);
  } finally {
    await close();
  }
});

batch('the retry policy is data: each retry waits minTimeoutMs times factor to the power of the retries before it', async (ctx) => {
  const { racing, batches, close } = await racingStore(ctx, () => true);
  const started: number[] = [];
  const timed: InventoryStore = {
    ...racing,
    appendBatch: (submissions, options) => {
      started.push(performance.now());
      return racing.appendBatch(submissions, options);
    },
  };
  try {
    const commands = makeCommandHandler({ store: timed, now: Date.now, retry: { attempts: 3, minTimeoutMs: 40, factor: 3 } });
    const failed = await commands
      .handle({ type: 'SetQuantity', petId: 1n, quantity: 7 }, meta('patient'))
      .then(appliedEntry)
      .catch((e: unknown) => e);
    assert.ok(failed instanceof CommitFailed, String(failed));
    assert.is(batches.length, 3);
    // Each gap is at least the pause (less a millisecond of timer rounding), whatever the load adds.
    assert.ok(started[1]! - started[0]! >= 39, `first retry after ${started[1]! - started[0]!} ms`);
    assert.ok(started[2]! - started[1]! >= 119, `second retry after ${started[2]! - started[1]!} ms`);
  } finally {
    await close();
  }
});

batch('a pet this process wrote last is decided without reading it again (SQLite), while no other writer came', async (ctx) => {
  const reads: bigint[][] = [];
  const counting: InventoryStore = {
    ...ctx.store,
    loadEntries: (petIds, options) => {
      reads.push([...petIds]);
      return ctx.store.loadEntries(petIds, options);
    },
  };
  const commands = makeCommandHandler({ store: counting, now: Date.now });
  await commands.handle({ type: 'SetQuantity', petId: 1n, quantity: 3 }, meta('first')).then(appliedEntry);
  assert.equal(reads, [[1n]], 'read once, not known yet');
  reads.length = 0;
  const second = await commands
    .handle({ type: 'SetQuantity', petId: 1n, quantity: 4, precondition: at(2) }, meta('second'))
    .then(appliedEntry);
  assert.is(second.version, 3);
  // PostgreSQL's token moves with the notification of this very commit, which may come
  // after it: there a batch may read, as before.
  if (ctx.target.name === 'sqlite') assert.equal(reads, [], 'known from its own commit');
  // Another process writes pet 1: the store's change token moves, and pet 1 is read again.
  const otherStore = await ctx.target.open(ctx.db);
  try {
    await makeCommandHandler({ store: otherStore, now: Date.now })
      .handle({ type: 'SetStatus', petId: 1n, status: 'sold' }, meta('other'))
      .then(appliedEntry);
  } finally {
    await otherStore.close();
  }
  const third = await commands
    .handle({ type: 'SetQuantity', petId: 1n, quantity: 5, precondition: at(4) }, meta('third'))
    .then(appliedEntry);
  assert.equal([third.version, third.status, third.quantity], [5, 'sold', 5], 'decided on what the other writer left');
});

batch(
  'an entry known from memory that another writer changed never answers wrongly: refusals and appends are decided again',
  async (ctx) => {
    const commands = makeCommandHandler({ store: ctx.store, now: Date.now });
    await commands.handle({ type: 'SetQuantity', petId: 1n, quantity: 3 }, meta('first')).then(appliedEntry);
    // The other writer commits through a command handler of its own on the same store, so
    // that the store's change token may not tell this one.
    const other = makeCommandHandler({ store: ctx.store, now: Date.now });
    await other.handle({ type: 'SetQuantity', petId: 1n, quantity: 9 }, meta('other')).then(appliedEntry);
    const guarded = await commands
      .handle({ type: 'SetQuantity', petId: 1n, quantity: 4, precondition: at(3) }, meta('guarded'))
      .then(appliedEntry);
    assert.equal([guarded.version, guarded.quantity], [4, 4], 'If-Match on the version the other writer left holds');
    await other.handle({ type: 'SetQuantity', petId: 1n, quantity: 10 }, meta('other-2')).then(appliedEntry);
    const plain = await commands.handle({ type: 'SetQuantity', petId: 1n, quantity: 5 }, meta('plain')).then(appliedEntry);
    assert.is(plain.version, 6, 'appended after the other writer’s event');
    assert.equal(
      (await written(ctx.store, (e) => BigInt(e.petId) === 1n && Number(e.version) > 1)).map((e) => ({ ...e, version: Number(e.version) })),
      [
        { requestId: 'first', version: 2 },
        { requestId: 'other', version: 3 },
        { requestId: 'guarded', version: 4 },
        { requestId: 'other-2', version: 5 },
        { requestId: 'plain', version: 6 },
      ],
    );
  },
);

batch.run();

const thread = suite<{ dir: TempDir; path: string; store: InventoryStore; commits: number[]; commands: CommandHandler }>(
  'group commit in the writer thread (SQLite only: the worker thread)',
);
thread.before.each(async (ctx) => {
  ctx.dir = tempDir('inv-thread-');
  ctx.path = ctx.dir.path('inventory.db');
  ctx.store = await openSqliteStore(ctx.path, { writer: 'thread' });
  ctx.commits = [];
  ctx.commands = makeCommandHandler({ store: ctx.store, now: Date.now, onCommit: (n) => ctx.commits.push(n) });
  await ctx.commands.handleAll(
    [1n, 2n].map((petId) => ({ type: 'TrackPet' as const, petId, quantity: 0, status: 'available' as const })),
    meta('seed'),
  );
  ctx.commits.length = 0;
});
thread.after.each(async (ctx) => {
  await ctx.store.close();
  ctx.dir.cleanup();
});

thread('one commit per turn, results in arrival order, the same pet chained, refusals apart', async (ctx) => {
  const settled = await Promise.allSettled([
    ctx.commands.handle({ type: 'SetQuantity', petId: 1n, quantity: 10 }, meta('a')).then(appliedEntry),
    ctx.commands.handle({ type: 'SetQuantity', petId: 99n, quantity: 1 }, meta('b')),
    ctx.commands.handle({ type: 'SetQuantity', petId: 1n, quantity: 11 }, meta('c')).then(appliedEntry),
    ctx.commands.handle({ type: 'SetQuantity', petId: 2n, quantity: 5, precondition: at(7) }, meta('d')),
    ctx.commands.handle({ type: 'SetQuantity', petId: 1n, quantity: 12, precondition: at(3) }, meta('f')).then(appliedEntry),
  ]);
  assert.equal(ctx.commits, [5]);
  const [a, b, c, d, f] = settled;
  assert.ok(a.status === 'fulfilled' && a.value.version === 2);
  assert.ok(b.status === 'fulfilled' && b.value.kind === 'refused' && b.value.refusal.reason === 'not_tracked');
  assert.ok(c.status === 'fulfilled' && c.value.version === 3);
  assert.ok(d.status === 'fulfilled' && d.value.kind === 'refused' && d.value.refusal.reason === 'precondition_failed');
  assert.ok(f.status === 'fulfilled' && f.value.version === 4 && f.value.quantity === 12);
  const entries = await entriesOf(ctx.store);
  assert.equal(
    entries.map((e) => [e.petId, e.quantity, e.version]),
    [
      [1n, 12, 4],
      [2n, 0, 1],
    ],
  );
});

thread('a failed commit in the thread fails the batch with CommitFailed and leaves nothing', async (ctx) => {
  const db = openDatabase(ctx.path);
  db.exec(`
    CREATE TABLE parent (id INTEGER PRIMARY KEY);
    CREATE TABLE child (parent_id INTEGER REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED);
    CREATE TRIGGER doom AFTER INSERT ON events WHEN NEW.request_id = 'doomed'
    BEGIN INSERT INTO child VALUES (404); END;`);
  db.close();
  const settled = await Promise.allSettled([
    ctx.commands.handle({ type: 'SetQuantity', petId: 1n, quantity: 5 }, meta('ok-1')).then(appliedEntry),
    ctx.commands.handle({ type: 'SetQuantity', petId: 2n, quantity: 6 }, meta('doomed')).then(appliedEntry),
  ]);
  assert.ok(settled.every((r) => r.status === 'rejected' && r.reason instanceof CommitFailed));
  assert.match(
    String(((settled[0] as PromiseRejectedResult).reason as { cause?: { code?: string } }).cause?.code),
    /SQLITE_CONSTRAINT/,
    'the cause keeps its SQLite code across the thread',
  );
  assert.equal(ctx.commits, []);
  assert.is(await lastSeqOf(ctx.store), 2, 'no event of the batch remains');
  assert.is((await ctx.commands.handle({ type: 'SetQuantity', petId: 1n, quantity: 5 }, meta('ok-2')).then(appliedEntry)).version, 2);
});

thread.run();

const http = appSuite('group commit over HTTP', { given: (t) => t.track(7, 1) });

http('a failed commit answers 503 in the Error shape; the service recovers', async ({ t }) => {
  await t.target.tamper.failCommitsOf(t.db, 'doomed');
  const res = await t.patch(7, { quantity: 2 }, { 'X-Request-Id': 'doomed' });
  assertErrorShape(res, 503, 'unavailable');
  assert.not.match(res.text, /FOREIGN|sqlite|postgres|constraint/i);
  assert.is((await t.events()).length, 1);
  assert.is((await t.patch(7, { quantity: 2 })).status, 200);
});

http.run();
