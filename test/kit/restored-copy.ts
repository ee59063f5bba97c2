// A log and a copy of it, as an operator restoring a backup would make: the same history
// (five pets tracked by an operator, under the same logId and signing key), each served
// by its own app on demand. Writes made on one after the copy are not on the other, so a
// checkpoint or receipt of the original's newer writes is not extended by the copy.
import * as assert from 'uvu/assert';
import type { SigningKeyData } from '../../src/support/signing.ts';
import { startApp, type TestApp } from './app.ts';
import { commandsOn } from './fixtures.ts';
import { runScript } from './scripts.ts';
import { openStore, type StoreTarget } from './stores.ts';

export interface RestoredCopy {
  /** The service on the original log. */
  original(): Promise<TestApp>;
  /** The service on the copy made after the shared history. */
  restored(): Promise<TestApp>;
  /** Closes every app started and removes both databases. */
  cleanup(): Promise<void>;
}

export async function restoredCopy(target: StoreTarget, signingKey: SigningKeyData): Promise<RestoredCopy> {
  const [original, copy] = [await target.fresh(), await target.fresh()];
  const apps: TestApp[] = [];
  let clock = Date.parse('2026-01-02T03:04:05.678Z');
  const seeded = await openStore(original.db, { now: () => clock, signingKey });
  try {
    const commands = commandsOn(seeded, () => clock);
    for (let pet = 1; pet <= 5; pet++) {
      await commands.handle(
        { type: 'TrackPet', petId: BigInt(pet), quantity: 1, status: 'available' },
        { actor: 'cli:root', requestId: `seed-${pet}` },
      );
      clock += 1000;
    }
  } finally {
    await seeded.close();
  }
  await (await target.open(copy.db)).close();
  const copied = await runScript('copy-store', ['--from', original.db, '--to', copy.db]);
  assert.is(copied.status, 0, copied.stderr);
  const serve = async (db: string) => {
    const app = await startApp({ target, signingKey, open: (_fresh, now) => openStore(db, { now, signingKey }) });
    apps.push(app);
    return app;
  };
  return {
    original: () => serve(original.db),
    restored: () => serve(copy.db),
    async cleanup() {
      for (const app of apps) await app.close();
      await original.cleanup();
      await copy.cleanup();
    },
  };
}
