// Two service instances on one PostgreSQL database writing the same few pets at once (hot
// pets): a version conflict between them is decided again, never answered 503. Each
// instance keeps 40 connections busy with PATCHes on pets 1-3 for 2 s; every answer is a
// 200, and the log holds exactly one event per 200 (no write lost, none doubled).
//
// The race is made certain rather than waited for: whenever instance B reads entries
// (outside the chain head's lock), instance A writes those pets and commits before B
// gets them, so every batch B decides on a read is stale by the time it reaches the
// lock, as happens to the slower of two instances under load. A command that is only ever decided outside
// the lock would conflict on every attempt until its attempts ran out (a 503); decided
// again under the lock, inside the batch's own transaction, it commits whatever A does.
// A refusal decided under the lock is the request's answer: an If-Match that held on B's
// read but not on the entry under the lock is a 412, and B writes nothing.
// SQLite is not run here: its writer thread cannot call back into the application to
// decide a command again (closures do not cross threads), so a stale decision there is
// retried by the retry policy alone, and this test's adversary would starve it.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { appliedEntries, makeCommandHandler, type CommandHandler } from '../../src/application/write/commands.ts';
import type { InventoryStore } from '../../src/store/port.ts';
import { startApp, type TestApp } from '../kit/app.ts';
import { eventsOf } from '../kit/fixtures.ts';
import type { Response } from '../kit/http.ts';
import { postgresTarget } from '../kit/postgres-target.ts';

const CONNECTIONS = 40;
const RUN_MS = 2_000;
const PETS = [1, 2, 3];

/** Keeps one connection's worth of PATCHes going until `until`; every answer kept. */
async function patchUntil(app: TestApp, connection: number, until: number, answers: Response[]): Promise<void> {
  for (let n = 0; Date.now() < until; n++) {
    const petId = PETS[(connection + n) % PETS.length]!;
    answers.push(await app.patch(petId, { quantity: (connection * 1000 + n) % 100_000 }));
  }
}

/** What instance A writes between B's reads and B's turn at the lock. */
interface Interference {
  /** Commits A made that way. */
  writes: number;
  /** Errors of those commits (none expected: A's own conflicts are decided again too). */
  failures: unknown[];
  /** How often B's store decided one of B's submissions again under the lock. */
  decidedAgain: number;
}

/** B's appendBatch, counting the submissions the store decides again. */
function countingDecisions(store: InventoryStore, interference: Interference): InventoryStore['appendBatch'] {
  return (submissions, options = {}) => {
    const { decideAgain } = options;
    if (!decideAgain) return store.appendBatch(submissions, options);
    return store.appendBatch(submissions, {
      ...options,
      decideAgain: (index, entry) => {
        interference.decidedAgain += 1;
        return decideAgain(index, entry);
      },
    });
  };
}

/**
 * B's store: each time B reads entries (outside the lock), instance A sets the quantity of
 * those pets and commits before B gets them, so whatever B decides on that read is stale.
 */
function readingStale(store: InventoryStore, a: CommandHandler, interference: Interference): InventoryStore {
  return new Proxy(store, {
    get(target, property, receiver) {
      if (property === 'appendBatch') return countingDecisions(target, interference);
      if (property !== 'loadEntries') return Reflect.get(target, property, receiver) as unknown;
      const loadEntries: InventoryStore['loadEntries'] = async (petIds, options) => {
        const entries = await target.loadEntries(petIds, options);
        const tracked = [...entries.values()].flatMap((entry) => (entry ? [entry.petId] : []));
        const commands = tracked.map((petId) => ({ type: 'SetQuantity' as const, petId, quantity: interference.writes }));
        if (commands.length > 0) {
          try {
            const written = await a.handleAll(commands, { actor: 'cli:interference', requestId: 'interference' }).then(appliedEntries);
            interference.writes += written.length;
          } catch (error) {
            interference.failures.push(error);
          }
        }
        return entries;
      };
      return loadEntries;
    },
  });
}

const target = postgresTarget();
const hot = suite<{ apps: TestApp[] }>('hot pets written through two instances on one PostgreSQL database');
hot.before.each((ctx) => {
  ctx.apps = [];
});
hot.after.each(async ({ apps }) => {
  for (const app of apps.reverse()) await app.close();
});

hot(
  `2 x ${CONNECTIONS} connections on ${PETS.length} pets for ${RUN_MS} ms, B's reads always stale: no 503, one event per 200`,
  async ({ apps }) => {
    const a = await startApp({ target, realClock: true });
    apps.push(a);
    const interference: Interference = { writes: 0, failures: [], decidedAgain: 0 };
    const fromA = makeCommandHandler({ store: a.store, now: Date.now });
    const b = await startApp({
      target,
      realClock: true,
      keyName: 'second',
      open: async (_fresh, now) => readingStale(await target.open(a.db, { now }), fromA, interference),
    });
    apps.push(b);
    for (const petId of PETS) await a.track(petId, 0);
    const before = (await eventsOf(a.store)).length;

    // By instance: A's answers, then B's.
    const byInstance: Response[][] = [[], []];
    const until = Date.now() + RUN_MS;
    await Promise.all(
      [a, b].flatMap((app, i) =>
        Array.from({ length: CONNECTIONS }, (_, c) => patchUntil(app, i * CONNECTIONS + c, until, byInstance[i]!)),
      ),
    );
    const answers = byInstance.flat();
    const counts = byInstance.map((list) => {
      const byStatus: Record<number, number> = {};
      for (const r of list) byStatus[r.status] = (byStatus[r.status] ?? 0) + 1;
      return JSON.stringify(byStatus);
    });
    console.log(
      `${answers.length} PATCHes through two instances: A ${counts[0]}, B ${counts[1]}; ` +
        `${interference.writes} interfering writes, ${interference.decidedAgain} of B's submissions decided again under the lock`,
    );
    const failed = answers.find((r) => r.status !== 200);
    assert.is(failed, undefined, failed && `${failed.status} ${failed.text}`);

    assert.equal(interference.failures, [], "A's interfering writes all committed");
    assert.ok(interference.writes > 0, "A wrote between B's reads and B's batches");
    assert.ok(interference.decidedAgain > 0, "B's stale submissions were decided again under the lock");

    const appended = (await eventsOf(a.store)).slice(before);
    assert.ok(
      appended.every((e) => e.type === 'QuantitySet'),
      'only the PATCHes and the interference wrote',
    );
    const interfering = appended.filter((e) => e.actor === 'cli:interference').length;
    assert.is(interfering, interference.writes, 'each interfering write is one event');
    assert.is(appended.length - interfering, answers.length, 'one event per 200');
    // No two 200s name the same version of a pet: each answer is its own event.
    const versions = new Set(answers.map((r) => `${r.json<{ petId: number }>().petId}@${String(r.headers.etag)}`));
    assert.is(versions.size, answers.length, 'each 200 names its own version');
  },
);

hot("an If-Match that matched B's stale read but not the entry under the lock: 412, nothing written by B", async ({ apps }) => {
  const a = await startApp({ target, realClock: true });
  apps.push(a);
  await a.track(1, 0);
  const interference: Interference = { writes: 0, failures: [], decidedAgain: 0 };
  const fromA = makeCommandHandler({ store: a.store, now: Date.now });
  const b = readingStale(await target.open(a.db), fromA, interference);
  try {
    const fromB = makeCommandHandler({ store: b, now: Date.now });
    // Decided on B's read (version 1, If-Match "1" holds), then stale: A wrote version 2.
    const ifMatch = (version: number) => (version === 1 ? undefined : 'If-Match');
    const refused = await fromB.handle(
      { type: 'SetQuantity', petId: 1n, quantity: 99, precondition: ifMatch },
      { actor: 'cli:b', requestId: 'b' },
    );
    assert.ok(refused.kind === 'refused' && refused.refusal.reason === 'precondition_failed', refused.kind);
    assert.equal(interference.failures, []);
    assert.is(interference.writes, 1);
    assert.is(interference.decidedAgain, 1, 'decided again under the lock, not retried');
    const events = await eventsOf(a.store);
    assert.equal(
      events.map((e) => [e.version, e.actor]),
      [
        [1n, 'cli:test'],
        [2n, 'cli:interference'],
      ],
    );
  } finally {
    await b.close();
  }
});

hot.run();
