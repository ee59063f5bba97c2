// A running instance whose signing key was retired stops signing: its writes (and the
// readiness probe's write) fail with StoreUnavailable, so that they answer 503 and
// /readyz says why, until it restarts with an endorsed key. The key log is read at most
// once per RETIREMENT_CHECK_MS while writes come, so the bound holds on both databases
// without a read per write; a retirement, once seen, is final.
import { StoreUnavailable } from './health.ts';
import { retiredProblem, type SigningKeyInfo } from './signing-keys.ts';
import type { InventoryStore } from './port.ts';

/** How stale the instance's knowledge of its key's retirement may be: the revocation bound. */
export const RETIREMENT_CHECK_MS = 100;

export function watchRetirement(store: InventoryStore, keyId: string): InventoryStore {
  let problem: string | undefined;
  let checkedAt = -Infinity;
  let reading: Promise<void> | undefined;
  const refresh = () =>
    (reading ??= store
      .signingKeys()
      .then((keys: SigningKeyInfo[]) => {
        problem = retiredProblem(keys, keyId);
        checkedAt = Date.now();
      })
      .finally(() => (reading = undefined)));
  const check = async () => {
    if (problem === undefined && Date.now() - checkedAt >= RETIREMENT_CHECK_MS) await refresh();
    if (problem !== undefined) throw new StoreUnavailable(problem);
  };
  return {
    ...store,
    appendBatch: async (submissions, options) => {
      await check();
      return store.appendBatch(submissions, options);
    },
    probeWrite: async () => {
      await check();
      return store.probeWrite();
    },
    unavailable: () => problem ?? store.unavailable(),
  };
}
