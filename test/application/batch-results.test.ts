// What a batch's commands come to: every expected outcome (applied, refused, a key's
// answer replayed or refused) is a result the caller switches on, and an exception while
// a command is decided (a bug, a dependency that throws) is a fault of that command alone:
// never a refusal, never stored as a key's answer, and the other commands of its batch
// are decided and written as if it were not there.
import * as assert from 'uvu/assert';
import type { Idempotent } from '../../src/application/write/command-result.ts';
import { makeCommandHandler, type CommandHandler } from '../../src/application/write/commands.ts';
import type { InventoryStore } from '../../src/store/port.ts';
import { eventsOf } from '../kit/fixtures.ts';
import { targetSuites } from '../kit/suites.ts';

interface Ctx {
  cleanup: () => Promise<void>;
  store: InventoryStore;
  commands: CommandHandler;
  commits: number[];
}

const meta = (requestId: string) => ({ actor: 'k', requestId });
const at = (version: number) => (v: number) => (v === version ? undefined : 'if-match-failed');

class InjectedBug extends Error {}
/** A precondition that throws: a dependency of decide with a bug in it. */
const buggy = () => {
  throw new InjectedBug('a bug in a precondition');
};

const keyed = (key: string, fingerprint = 'f'): Idempotent => ({
  scope: { apiKey: 'k', key },
  path: '/v1/inventory/1',
  fingerprint,
  answers: {
    applied: (entry) => ({ status: 200, etag: `"${entry.version}"`, body: 'applied' }),
    refused: (refusal) => ({ status: 404, etag: null, body: refusal.reason }),
  },
});

const results = targetSuites<Ctx>('batch results', {
  async beforeEach(ctx) {
    const fresh = await ctx.target.fresh();
    ctx.cleanup = fresh.cleanup;
    ctx.store = await ctx.target.open(fresh.db);
    ctx.commits = [];
    ctx.commands = makeCommandHandler({ store: ctx.store, now: Date.now, onCommit: (items) => ctx.commits.push(items) });
    const seeded = await ctx.commands.handleAll(
      [1n, 2n].map((petId) => ({ type: 'TrackPet' as const, petId, quantity: 0, status: 'available' as const })),
      meta('seed'),
    );
    assert.is(seeded.kind, 'applied');
    ctx.commits.length = 0;
  },
  async afterEach(ctx) {
    await ctx.store.close();
    await ctx.cleanup();
  },
});

results('refusals are results, not exceptions, each in its own place in the batch', async (ctx) => {
  const [missing, stale, tracked] = await Promise.all([
    ctx.commands.handle({ type: 'SetQuantity', petId: 99n, quantity: 1 }, meta('a')),
    ctx.commands.handle({ type: 'SetQuantity', petId: 1n, quantity: 1, precondition: at(7) }, meta('b')),
    ctx.commands.handleAll([{ type: 'TrackPet', petId: 2n, quantity: 1, status: 'sold' }], meta('c')),
  ]);
  assert.equal(ctx.commits, [3], 'one batch');
  assert.equal(missing, { kind: 'refused', refusal: { reason: 'not_tracked', petId: 99n } });
  assert.equal(stale, {
    kind: 'refused',
    refusal: { reason: 'precondition_failed', petId: 1n, currentVersion: 1, failed: 'if-match-failed' },
  });
  assert.equal(tracked, { kind: 'refused', refusal: { reason: 'already_tracked', petId: 2n } });
  assert.is((await eventsOf(ctx.store)).length, 2, 'nothing written but the seed');
});

results('a fault while deciding fails its own command with itself, never as a refusal; the batch goes on', async (ctx) => {
  const settled = await Promise.allSettled([
    ctx.commands.handle({ type: 'SetQuantity', petId: 1n, quantity: 10 }, meta('before')),
    ctx.commands.handle({ type: 'SetQuantity', petId: 1n, quantity: 66, precondition: buggy }, meta('bug')),
    ctx.commands.handle({ type: 'SetQuantity', petId: 99n, quantity: 1 }, meta('missing')),
    ctx.commands.handle({ type: 'SetQuantity', petId: 1n, quantity: 11, precondition: at(2) }, meta('after')),
  ]);
  assert.equal(ctx.commits, [4], 'one batch');
  const [before, bug, missing, after] = settled;
  assert.ok(before.status === 'fulfilled' && before.value.kind === 'applied' && before.value.entry.version === 2);
  assert.ok(bug.status === 'rejected', 'the fault is thrown to its caller');
  assert.instance(bug.reason, InjectedBug, 'as itself (a 500), not as a refusal nor as a failed commit');
  assert.ok(missing.status === 'fulfilled' && missing.value.kind === 'refused' && missing.value.refusal.reason === 'not_tracked');
  // Decided against what the command before it left, as if the faulty one were not there.
  assert.ok(after.status === 'fulfilled' && after.value.kind === 'applied' && after.value.entry.version === 3);
  const events = await eventsOf(ctx.store);
  assert.equal(
    events.filter((e) => e.requestId !== 'seed').map((e) => [e.requestId, Number(e.version)]),
    [
      ['before', 2],
      ['after', 3],
    ],
    'every acknowledged write is there, nothing of the fault',
  );
});

results('a fault in an all-or-nothing file fails it whole, with itself, and writes nothing', async (ctx) => {
  const failed = await ctx.commands
    .handleAll(
      [
        { type: 'SetQuantity', petId: 1n, quantity: 3 },
        { type: 'SetQuantity', petId: 2n, quantity: 4, precondition: buggy },
      ],
      meta('file'),
    )
    .then(
      () => undefined,
      (error: unknown) => error,
    );
  assert.instance(failed, InjectedBug);
  assert.is((await eventsOf(ctx.store)).length, 2, 'nothing written but the seed');
});

results('a fault is never stored as a key answer: the key stays free, and the retry is carried out', async (ctx) => {
  const faulted = await ctx.commands
    .handle({ type: 'SetQuantity', petId: 1n, quantity: 5, precondition: buggy }, meta('first'), keyed('k1'))
    .then(
      () => undefined,
      (error: unknown) => error,
    );
  assert.instance(faulted, InjectedBug);
  const retried = await ctx.commands.handle({ type: 'SetQuantity', petId: 1n, quantity: 5 }, meta('retry'), keyed('k1'));
  assert.is(retried.kind, 'applied', 'carried out, not replayed');
});

results('a key answer stored and the same key for another request: results, not exceptions', async (ctx) => {
  const first = await ctx.commands.handle({ type: 'SetQuantity', petId: 99n, quantity: 5 }, meta('first'), keyed('k2'));
  assert.equal(first, {
    kind: 'refused',
    refusal: { reason: 'not_tracked', petId: 99n },
    answer: { status: 404, etag: null, body: 'not_tracked' },
  });
  // Two requests with the key in one batch: the first stores its answer, the second is
  // told it (replayed) or, for another request, refused as reused.
  const [same, other] = await Promise.all([
    ctx.commands.handle({ type: 'SetQuantity', petId: 1n, quantity: 5 }, meta('same'), keyed('k3')),
    ctx.commands.handle({ type: 'SetQuantity', petId: 1n, quantity: 6 }, meta('other'), keyed('k3', 'g')),
  ]);
  assert.is(same.kind, 'applied');
  assert.equal(other, { kind: 'refused', refusal: { reason: 'idempotency_key_reused' } });
});

results.run();
