// The receipts' signing keys in the key log on PostgreSQL: entered when an instance
// starts with its key, added and retired by operators (scripts/keys), each change under
// the key chain's head like every key change.
import type pg from 'pg';
import {
  SIGNING_KEYS_SQL,
  signingKeyAtStart,
  signingKeyInfo,
  type SigningKeyAddition,
  type KeyAtStart,
  type SigningKeyInfo,
  type SigningKeyLog,
  type SigningKeyRetirement,
} from '../../signing-keys.ts';
import { BEGIN_KEY_CHANGE, logKeyEvent } from '../key-log.ts';
import { inTransaction } from '../transactions.ts';

/** Signing keys as the key log lists them, read inside the transaction that holds the key chain's head. */
async function listedSigningKeys(client: pg.ClientBase): Promise<SigningKeyInfo[]> {
  const { rows } = await client.query<Parameters<typeof signingKeyInfo>[0]>(SIGNING_KEYS_SQL);
  return rows.map(signingKeyInfo);
}

/** Enters an instance's signing key as the log's first, or checks that the log lists it
 * unretired (signingKeyAtStart): of several instances starting together on a log without
 * keys, one enters its key and the others are judged after it. */
export async function startSigning(pool: pg.Pool, key: KeyAtStart, at: string, actor: string): Promise<void> {
  await inTransaction(pool, BEGIN_KEY_CHANGE, async (client) => {
    const verdict = signingKeyAtStart(await listedSigningKeys(client), key);
    if (verdict instanceof Error) throw verdict;
    if (verdict === 'add') await logKeyEvent(client, 'SigningKeyAdded', key.keyId, key.publicKey, at, actor, key.data);
  });
}

/** The key log's signing keys as operators change them (scripts/keys). */
export function makeSigningKeyLog(pool: pg.Pool, now: () => number): SigningKeyLog {
  const at = () => new Date(now()).toISOString();
  return {
    addSigningKey: (entry, actor) =>
      inTransaction(pool, BEGIN_KEY_CHANGE, async (client): Promise<SigningKeyAddition> => {
        if ((await listedSigningKeys(client)).some((k) => k.keyId === entry.keyId)) return 'listed already';
        await logKeyEvent(client, 'SigningKeyAdded', entry.keyId, entry.publicKey, at(), actor, entry.data);
        return 'added';
      }),
    retireSigningKey: (keyId, actor) =>
      inTransaction(pool, BEGIN_KEY_CHANGE, async (client): Promise<SigningKeyRetirement> => {
        const key = (await listedSigningKeys(client)).find((k) => k.keyId === keyId);
        if (!key) return 'unknown';
        if (key.retiredAt !== null) return 'already retired';
        await logKeyEvent(client, 'SigningKeyRetired', keyId, key.publicKey, at(), actor);
        return 'retired';
      }),
  };
}
