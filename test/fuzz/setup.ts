// What every fuzz property shares: how long it runs (FUZZ_SCALE, FUZZ_SEED), the limits
// it holds the service to, and its app: the three pets tracked, and after each property
// only the setup's PetTracked events and the tester's QuantitySet events, no warning
// logged, no key in the logs. Each property runs on every store target.
import * as assert from 'uvu/assert';
import { MAX_PET_ID } from '../../src/domain/events.ts';
import { appSuite } from '../kit/suites.ts';

const SCALE = Number(process.env.FUZZ_SCALE ?? 1);
const SEED = process.env.FUZZ_SEED === undefined ? undefined : Number(process.env.FUZZ_SEED);
export const runs = (n: number) => ({
  numRuns: Math.max(1, Math.round(n * SCALE)),
  includeErrorInReport: true,
  ...(SEED === undefined ? {} : { seed: SEED }),
});

export const MAX = MAX_PET_ID;
export const TWO_53 = 2n ** 53n;
export const TWO_63 = 2n ** 63n;
export const LIMIT = 4096;
/** No answer may take longer than this. */
export const STALL_MS = 2000;
/** Tracked in every app of this file: a small id, one above 2^53, int64 max. */
export const PETS: readonly (readonly [bigint, number])[] = [
  [7n, 3],
  [TWO_53 + 1n, 0],
  [MAX, 2147483647],
];
export const PET_IDS = PETS.map(([id]) => String(id));

/** A suite of one app per test on every target, seeded with PETS and checked after each test. */
export function fuzzSuite(name: string) {
  return appSuite(name, {
    given: async (t) => {
      for (const [id, quantity] of PETS) await t.track(id, quantity);
    },
    then: async (t) => {
      const events = await t.events();
      assert.equal(
        events.slice(0, PETS.length).map((e) => e.type),
        PETS.map(() => 'PetTracked'),
      );
      for (const e of events.slice(PETS.length)) {
        assert.is(e.type, 'QuantitySet');
        assert.is(e.actor, 'tester');
      }
      for (const line of t.logs) {
        assert.not.ok(line.includes(t.key), `no key in the logs: ${line.replaceAll(t.key, '<KEY>')}`);
        assert.ok((JSON.parse(line) as { level: number }).level < 40, `no warning or error logged: ${line}`);
      }
    },
  });
}
