// The key log on PostgreSQL: every creation and revocation of a key is entered in
// api_key_events first, chained under the key chain's head, which each key change locks
// (BEGIN_KEY_CHANGE); the api_keys table's triggers refuse a key or a revocation without
// its event. Each change tells every instance at COMMIT (NOTIFY with the new seq).
import type pg from 'pg';
import { keyEventHash, type KeyEventType } from '../hash-chain.ts';
import { generateKey, hashKey, KEY_NAME_PATTERN, KeyNameTaken, scopeData, type KeyScope, type Revocation } from '../keys.ts';
import { KEYS_CHANNEL } from './changes.ts';

export const BEGIN_KEY_CHANGE = 'BEGIN; SELECT seq, hash FROM key_chain_head FOR UPDATE';
const FIRST_KEY_LOCK = 'petstore-inventory/first-key';

/** Appends a key event after the head that the transaction holds, and moves the head; tells
 * every instance at COMMIT (NOTIFY with the new seq). Returns the new seq. */
export async function logKeyEvent(
  client: pg.ClientBase,
  type: KeyEventType,
  name: string,
  keyHash: string,
  at: string,
  actor: string,
  data = '',
): Promise<bigint> {
  const { rows } = await client.query<{ seq: string; hash: string }>('SELECT seq::text AS seq, hash FROM key_chain_head');
  const seq = BigInt(rows[0]!.seq) + 1n;
  const prevHash = rows[0]!.hash;
  const hash = keyEventHash({ prevHash, seq, type, name, keyHash, recordedAt: at, actor, data });
  await client.query(
    `WITH logged AS (
       INSERT INTO api_key_events (seq, type, name, key_hash, recorded_at, actor, prev_hash, hash, data)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
     )
     UPDATE key_chain_head SET seq = $1, hash = $8 RETURNING pg_notify('${KEYS_CHANNEL}', seq::text)`,
    [String(seq), type, name, keyHash, at, actor, prevHash, hash, data],
  );
  return seq;
}

/** Inside a transaction that holds the key chain's head; returns the key and its event's seq. */
export async function insertKey(
  client: pg.ClientBase,
  name: string,
  createdBy: string,
  at: string,
  scope: KeyScope = 'read-write',
): Promise<[string, bigint]> {
  if (!KEY_NAME_PATTERN.test(name)) throw new Error(`invalid key name "${name}"`);
  // A name the key log holds stays taken, even if its api_keys row is gone.
  const { rows } = await client.query('SELECT 1 FROM api_keys WHERE name = $1 UNION ALL SELECT 1 FROM api_key_events WHERE name = $1', [
    name,
  ]);
  if (rows.length > 0) throw new KeyNameTaken(name);
  const key = generateKey();
  const keyHash = hashKey(key);
  const seq = await logKeyEvent(client, 'KeyCreated', name, keyHash, at, createdBy, scopeData(scope));
  await client.query('INSERT INTO api_keys (name, hash, created_at, created_by) VALUES ($1, $2, $3, $4)', [name, keyHash, at, createdBy]);
  return [key, seq];
}

/**
 * The first key, unless there is one: instances starting together on an empty database
 * take turns here (an advisory lock held to COMMIT), the first makes the key, the others
 * then see it. Inside a transaction that holds the key chain's head.
 */
export async function insertFirstKey(
  client: pg.ClientBase,
  name: string,
  createdBy: string,
  at: string,
): Promise<[string | undefined, bigint | undefined]> {
  await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [FIRST_KEY_LOCK]);
  const { rows } = await client.query<{ any: boolean }>('SELECT EXISTS (SELECT 1 FROM api_keys) AS any');
  return rows[0]!.any ? [undefined, undefined] : insertKey(client, name, createdBy, at);
}

/** Inside a transaction that holds the key chain's head; the seq of its event when revoked. */
export async function revokeKey(
  client: pg.ClientBase,
  name: string,
  revokedBy: string,
  at: string,
): Promise<[Revocation, bigint | undefined]> {
  const { rows } = await client.query<{ hash: string; revoked_at: string | null }>(
    'SELECT hash, revoked_at FROM api_keys WHERE name = $1',
    [name],
  );
  if (rows.length === 0) return ['unknown', undefined];
  if (rows[0]!.revoked_at !== null) return ['already revoked', undefined];
  const seq = await logKeyEvent(client, 'KeyRevoked', name, rows[0]!.hash, at, revokedBy);
  await client.query('UPDATE api_keys SET revoked_at = $2, revoked_by = $3 WHERE name = $1', [name, at, revokedBy]);
  return ['revoked', seq];
}
