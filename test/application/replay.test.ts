// Property: whatever the history, replaying the log rebuilds exactly the projection
// that the live write path kept. Random histories from a seeded generator, so a
// failure names the seed that reproduces it.
import * as assert from 'uvu/assert';
import type { Idempotent } from '../../src/application/write/command-result.ts';
import { makeCommandHandler } from '../../src/application/write/commands.ts';
import type { Command } from '../../src/domain/decide.ts';
import { PET_STATUSES } from '../../src/domain/events.ts';
import { compare, rebuildProjection, replayPages } from '../../src/application/verify/rebuild.ts';
import type { Entry } from '../../src/store/projection.ts';
import { seededRandom } from '../kit/random.ts';
import { targetSuites } from '../kit/suites.ts';
import { entriesOf, lastSeqOf } from '../kit/fixtures.ts';

const property = targetSuites('replay equals the live projection');

property('for 40 random histories of up to 300 commands over ids small and above 2^53', async ({ target }) => {
  for (let seed = 1; seed <= 40; seed++) {
    const rnd = seededRandom(seed);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(rnd() * items.length)]!;
    const ids = Array.from({ length: 1 + Math.floor(rnd() * 12) }, (_, i) =>
      rnd() < 0.3 ? 9223372036854775807n - BigInt(i) : BigInt(1 + Math.floor(rnd() * 1000)),
    );
    const fresh = await target.fresh();
    let clock = 0;
    const now = () => (clock += Math.floor(rnd() * 5));
    const store = await target.open(fresh.db, { now });
    try {
      const commands = makeCommandHandler({ store, now });
      // Some quantity changes carry an idempotency key from a small pool: a key used again
      // for the same change is replayed (nothing appended), for another one refused.
      const stored = new Map<string, { fingerprint: string; body: string }>();
      let appended = await lastSeqOf(store);
      const keyed = (key: string, petId: bigint, quantity: number): Idempotent => ({
        scope: { apiKey: 'k', key },
        path: `/v1/inventory/${petId}`,
        fingerprint: `${petId}:${quantity}`,
        answers: {
          applied: (entry) => ({ status: 200, etag: null, body: `${entry.version}:${entry.quantity}` }),
          refused: (refusal) => ({ status: 404, etag: null, body: refusal.reason }),
        },
      });
      const steps = Math.floor(rnd() * 300);
      for (let i = 0; i < steps; i++) {
        const petId = pick(ids);
        const roll = rnd();
        const command: Command =
          roll < 0.2
            ? { type: 'TrackPet', petId, quantity: Math.floor(rnd() * 100), status: pick(PET_STATUSES) }
            : roll < 0.8
              ? { type: 'SetQuantity', petId, quantity: rnd() < 0.1 ? 2147483647 : Math.floor(rnd() * 100) }
              : { type: 'SetStatus', petId, status: pick(PET_STATUSES) };
        const key = command.type === 'SetQuantity' && rnd() < 0.4 ? `key-${Math.floor(rnd() * 8)}` : undefined;
        // Keys are scoped to the API key: the same key on another pet is another request.
        const scoped = key ?? '';
        const idempotent = key && command.type === 'SetQuantity' ? keyed(key, command.petId, command.quantity) : undefined;
        // Now and then the same keyed request twice at once: one batch, one event.
        const copies = idempotent && rnd() < 0.2 ? 2 : 1;
        const results = await Promise.allSettled(
          Array.from({ length: copies }, () => commands.handle(command, { actor: `k${i % 3}`, requestId: `r${i}` }, idempotent)),
        );
        for (const result of results) {
          if (result.status === 'fulfilled') {
            const outcome = result.value;
            if (outcome.kind === 'applied') {
              appended++;
              if (idempotent)
                stored.set(scoped, { fingerprint: idempotent.fingerprint, body: `${outcome.entry.version}:${outcome.entry.quantity}` });
            } else if (outcome.kind === 'replayed') {
              const first = stored.get(scoped);
              // A 404 stored for the key is replayed too; a 200 as it was given.
              if (first) assert.is(outcome.record.body, first.body, `seed ${seed}: the replay is the first answer`);
              assert.is(outcome.record.fingerprint, idempotent!.fingerprint, `seed ${seed}`);
            } else if (outcome.refusal.reason === 'idempotency_key_reused') {
              assert.is.not(stored.get(scoped)?.fingerprint, idempotent!.fingerprint, `seed ${seed}: refused only for another request`);
            } else if (outcome.answer) {
              // A refusal whose answer was stored with its key comes with that answer.
              assert.is(outcome.refusal.reason, 'not_tracked', `seed ${seed}`);
              stored.set(scoped, { fingerprint: idempotent!.fingerprint, body: outcome.answer.body });
            } else {
              // Refusals (already tracked, not tracked) are part of a realistic history.
              assert.ok(['already_tracked', 'not_tracked'].includes(outcome.refusal.reason), `seed ${seed}: ${outcome.refusal.reason}`);
              assert.ok(!(idempotent && outcome.refusal.reason === 'not_tracked'), `seed ${seed}: a keyed 404 is stored`);
            }
            continue;
          }
          // Any failure fails the property.
          throw result.reason;
        }
      }
      assert.is(await lastSeqOf(store), appended, `seed ${seed}: one event per request carried out, none per replay`);
      const live = await entriesOf(store);
      const entries = new Map<bigint, Entry>();
      await replayPages(store.replayRows(), entries);
      assert.equal(compare(live, entries), [], `seed ${seed}`);
      assert.is(entries.size, live.length, `seed ${seed}`);
      const report = await rebuildProjection(store, { check: false });
      assert.equal(report.differences, [], `seed ${seed}`);
      assert.equal(await entriesOf(store), live, `seed ${seed}: rebuilding changes nothing`);
    } finally {
      await store.close();
      await fresh.cleanup();
    }
  }
});

property.run();
