// The signing keys of the log, entered in the key log: an instance's key at start, a key
// added or retired by an operator. Each runs in an IMMEDIATE transaction of its own.
import type { Db } from '../database.ts';
import {
  SIGNING_KEYS_SQL,
  signingKeyAtStart,
  signingKeyInfo,
  type SigningKeyAddition,
  type KeyAtStart,
  type SigningKeyEntry,
  type SigningKeyRetirement,
} from '../../signing-keys.ts';
import type { LogKeyEvent } from '../key-log.ts';

export interface SigningKeyWriter {
  /** Enters an instance's signing key as the log's first, or checks that the log lists
   * it unretired (signingKeyAtStart); throws SigningKeyRefused. */
  startSigning(key: KeyAtStart, at: string, actor: string): void;
  addSigningKey(entry: SigningKeyEntry, at: string, actor: string): SigningKeyAddition;
  retireSigningKey(keyId: string, at: string, actor: string): SigningKeyRetirement;
}

export function makeSigningKeyWriter(db: Db, logKeyEvent: LogKeyEvent): SigningKeyWriter {
  const signingKeys = db.prepare(SIGNING_KEYS_SQL);
  const listed = () => (signingKeys.all() as Parameters<typeof signingKeyInfo>[0][]).map(signingKeyInfo);
  const startSigning = db.transaction((key: KeyAtStart, at: string, actor: string) => {
    const verdict = signingKeyAtStart(listed(), key);
    if (verdict instanceof Error) throw verdict;
    if (verdict === 'add') logKeyEvent('SigningKeyAdded', key.keyId, key.publicKey, at, actor, key.data);
  });
  const addSigningKey = db.transaction((entry: SigningKeyEntry, at: string, actor: string): SigningKeyAddition => {
    if (listed().some((k) => k.keyId === entry.keyId)) return 'listed already';
    logKeyEvent('SigningKeyAdded', entry.keyId, entry.publicKey, at, actor, entry.data);
    return 'added';
  });
  const retireSigningKey = db.transaction((keyId: string, at: string, actor: string): SigningKeyRetirement => {
    const key = listed().find((k) => k.keyId === keyId);
    if (!key) return 'unknown';
    if (key.retiredAt !== null) return 'already retired';
    logKeyEvent('SigningKeyRetired', keyId, key.publicKey, at, actor);
    return 'retired';
  });
  return {
    startSigning: (key, at, actor) => startSigning.immediate(key, at, actor),
    addSigningKey: (entry, at, actor) => addSigningKey.immediate(entry, at, actor),
    retireSigningKey: (keyId, at, actor) => retireSigningKey.immediate(keyId, at, actor),
  };
}
