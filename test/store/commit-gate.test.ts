// A batch answered as late is decided once between the store, about to COMMIT, and the
// deadline watch answering its clients: one given up before its COMMIT rolls back (its
// clients were told that nothing was written), and one whose COMMIT began is never
// answered as not written. On SQLite the COMMIT runs in the writer thread, so the
// decision crosses threads through shared memory.
import * as assert from 'uvu/assert';
import { suite } from 'uvu';
import { CommitFailed } from '../../src/application/write/group-commit.ts';
import { enterCommit, giveUpCommit, newCommitGate, type CommitGate } from '../../src/store/commit-gate.ts';
import { DeadlinePassed } from '../../src/store/health.ts';
import type { InventoryStore } from '../../src/store/port.ts';
import { commandsOn, entriesOf, eventsOf } from '../kit/fixtures.ts';
import { targetSuites } from '../kit/suites.ts';

const protocol = suite('the commit gate');

protocol('whichever comes first wins, and the other side is told so', () => {
  const entered = newCommitGate();
  assert.ok(enterCommit(entered), 'the store may commit an open batch');
  assert.not.ok(giveUpCommit(entered), 'a batch whose COMMIT began cannot be given up');
  assert.ok(enterCommit(entered), 'entering again (the batch redone) is still allowed');
  const given = newCommitGate();
  assert.ok(giveUpCommit(given), 'an open batch can be given up');
  assert.not.ok(enterCommit(given), 'a given-up batch may not commit');
  assert.ok(giveUpCommit(given), 'giving it up again says the same');
});

protocol.run();

interface Ctx {
  store: InventoryStore;
  cleanup: () => Promise<void>;
}

const stores = targetSuites<Ctx>('a batch and its commit gate', {
  async beforeEach(ctx) {
    const fresh = await ctx.target.fresh();
    ctx.cleanup = fresh.cleanup;
    // The service's store: on SQLite its writes go through the writer thread.
    ctx.store = await ctx.target.open(fresh.db, { writer: 'thread' });
    await commandsOn(ctx.store).handle(
      { type: 'TrackPet', petId: 1n, quantity: 1, status: 'available' },
      { actor: 'cli:test', requestId: 'seed' },
    );
  },
  async afterEach(ctx) {
    await ctx.store.close();
    await ctx.cleanup();
  },
});

/** The store, with each batch's gate handed to `seen` before the batch goes in. */
function watchingGates(store: InventoryStore, seen: (gate: CommitGate) => void): InventoryStore {
  return {
    ...store,
    appendBatch: (submissions, options = {}) => {
      if (options.gate) seen(options.gate);
      return store.appendBatch(submissions, options);
    },
  };
}

stores('a batch given up before its COMMIT rolls back: nothing written', async ({ store }) => {
  const commands = commandsOn(watchingGates(store, (gate) => assert.ok(giveUpCommit(gate))));
  try {
    await commands.handle({ type: 'SetQuantity', petId: 1n, quantity: 9 }, { actor: 'k', requestId: 'late' });
    assert.unreachable('the batch was given up');
  } catch (error) {
    // The group commit's failure of the whole batch, caused by the store's refusal to commit it.
    assert.instance(error, CommitFailed, String(error));
    assert.instance((error as CommitFailed).cause, DeadlinePassed, String((error as CommitFailed).cause));
  }
  assert.equal(
    (await eventsOf(store)).map((e) => e.requestId),
    ['seed'],
  );
  assert.is((await entriesOf(store))[0]!.quantity, 1);
});

stores('a batch that committed entered its gate: it can no longer be given up', async ({ store }) => {
  const gates: CommitGate[] = [];
  const commands = commandsOn(watchingGates(store, (gate) => gates.push(gate)));
  await commands.handle({ type: 'SetQuantity', petId: 1n, quantity: 9 }, { actor: 'k', requestId: 'on-time' });
  assert.is(gates.length, 1);
  assert.not.ok(giveUpCommit(gates[0]!), 'the store entered the gate before its COMMIT');
  assert.is((await entriesOf(store))[0]!.quantity, 9);
});

stores.run();
