// Signing keys for tests: a fresh Ed25519 key, and a second key endorsed by a log's
// current one as an operator does it (scripts/keys endorse-signing, run with the current
// key file in INVENTORY_SIGNING_KEY), so that an instance may start with it.
import { generateKeyPairSync } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import * as assert from 'uvu/assert';
import type { SigningKeyData } from '../../src/support/signing.ts';
import { tempDir } from './paths.ts';
import { runScript, type ScriptResult } from './scripts.ts';

export function newSigningKey(): SigningKeyData {
  return { pem: generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }) as string };
}

/** Runs scripts/keys on db with the two keys in files: `current` as INVENTORY_SIGNING_KEY, `other` as the argument. */
export async function keysWithFiles(
  db: string,
  args: (otherFile: string) => string[],
  current: SigningKeyData | undefined,
  other: SigningKeyData,
): Promise<ScriptResult> {
  const dir = tempDir('signing-keys-');
  try {
    const currentFile = dir.path('current.pem');
    const otherFile = dir.path('other.pem');
    if (current) writeFileSync(currentFile, current.pem, { mode: 0o600 });
    writeFileSync(otherFile, other.pem, { mode: 0o600 });
    return await runScript('keys', [...args(otherFile), '--db', db], { env: { INVENTORY_SIGNING_KEY: currentFile } });
  } finally {
    dir.cleanup();
  }
}

/** scripts/keys endorse-signing: `added` enters the key log of db, endorsed by `current`. */
export async function endorse(db: string, current: SigningKeyData, added: SigningKeyData): Promise<ScriptResult> {
  const r = await keysWithFiles(db, (file) => ['endorse-signing', file], current, added);
  assert.is(r.status, 0, r.stderr);
  return r;
}
