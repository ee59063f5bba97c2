// What the tests of the log's tiles and copies share: a signed service whose log holds
// enough events for full tiles, partial ones and a second level, and its verifier key.
import { generateKeyPairSync } from 'node:crypto';
import * as assert from 'uvu/assert';
import { runScript } from './scripts.ts';
import type { TestApp } from './app.ts';
import { trackPets } from './fixtures.ts';
import { appSuite } from './suites.ts';

export const newPem = () => ({ pem: generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }) as string });

/** Suites whose every test gets a service signing with a key of its own, with size pets tracked (one event each). */
export const signedLogSuite = (name: string, size: number) =>
  appSuite(name, {
    app: { signingKey: newPem() },
    given: (t) =>
      trackPets(
        t.store,
        Array.from({ length: size }, (_, i) => ({ petId: i + 1, quantity: i })),
      ),
  });

/** The verifier key the service lists first. */
export const verifierKeyOf = async (t: TestApp) =>
  (JSON.parse((await t.get('/v1/log/signing-keys')).text) as [{ verifierKey: string }])[0].verifierKey;

/** Copies t's log into dir with scripts/mirror, trusting vkey; it must pass. */
export async function mirrored(t: TestApp, vkey: string, dir: string): Promise<void> {
  const r = await runScript('mirror', ['--url', `http://127.0.0.1:${t.port}`, '--trust', vkey, dir], {
    env: { INVENTORY_KEY: t.key },
    timeoutMs: 120_000,
  });
  assert.is(r.status, 0, r.stderr);
}
