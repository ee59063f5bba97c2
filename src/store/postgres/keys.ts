// The api_keys table on PostgreSQL: hashes and names, never keys. authenticate asks the
// database every time, so a key revoked through any instance fails at the next request
// in every instance. Every creation and revocation is entered in the key log
// (api_key_events) first, chained under the key chain's head, which each key change
// locks: the table's triggers refuse a key or a revocation without its event.
import type pg from 'pg';
import { keyEventHash, type KeyEventType } from '../hash-chain.ts';
import { generateKey, hashKey, KEY_NAME_PATTERN, KeyNameTaken, type KeyInfo, type KeyStore } from '../keys.ts';
import type { KeyRecord } from '../history-copy.ts';
import { inTransaction } from './connection.ts';

const FIRST_KEY_LOCK = 'petstore-inventory/first-key';
const BEGIN_KEY_CHANGE = 'BEGIN; SELECT seq, hash FROM key_chain_head FOR UPDATE';

/** Appends a key event after the head that the transaction holds, and moves the head. */
async function logKeyEvent(client: pg.ClientBase, type: KeyEventType, name: string, keyHash: string, at: string, actor: string) {
  const { rows } = await client.query<{ seq: string; hash: string }>('SELECT seq::text AS seq, hash FROM key_chain_head');
  const seq = BigInt(rows[0]!.seq) + 1n;
  const prevHash = rows[0]!.hash;
  const hash = keyEventHash({ prevHash, seq, type, name, keyHash, recordedAt: at, actor });
  await client.query(
    `WITH logged AS (
       INSERT INTO api_key_events (seq, type, name, key_hash, recorded_at, actor, prev_hash, hash)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
     )
     UPDATE key_chain_head SET seq = $1, hash = $8`,
    [String(seq), type, name, keyHash, at, actor, prevHash, hash],
  );
}

/** Inside a transaction that holds the key chain's head. */
async function insertKey(client: pg.ClientBase, name: string, createdBy: string, at: string): Promise<string> {
  if (!KEY_NAME_PATTERN.test(name)) throw new Error(`invalid key name "${name}"`);
  // A name the key log holds stays taken, even if its api_keys row is gone.
  const { rows } = await client.query('SELECT 1 FROM api_keys WHERE name = $1 UNION ALL SELECT 1 FROM api_key_events WHERE name = $1', [
    name,
  ]);
  if (rows.length > 0) throw new KeyNameTaken(name);
  const key = generateKey();
  const keyHash = hashKey(key);
  await logKeyEvent(client, 'KeyCreated', name, keyHash, at, createdBy);
  await client.query('INSERT INTO api_keys (name, hash, created_at, created_by) VALUES ($1, $2, $3, $4)', [name, keyHash, at, createdBy]);
  return key;
}

export function makeKeys(pool: pg.Pool, now: () => number): KeyStore {
  const at = () => new Date(now()).toISOString();
  return {
    create: (name, createdBy) => inTransaction(pool, BEGIN_KEY_CHANGE, (client) => insertKey(client, name, createdBy, at())),
    // Instances starting together on an empty database take turns here (an advisory
    // lock held to COMMIT): the first makes the key, the others then see it.
    createFirst: (name, createdBy) =>
      inTransaction(pool, BEGIN_KEY_CHANGE, async (client) => {
        await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [FIRST_KEY_LOCK]);
        const { rows } = await client.query<{ any: boolean }>('SELECT EXISTS (SELECT 1 FROM api_keys) AS any');
        return rows[0]!.any ? undefined : insertKey(client, name, createdBy, at());
      }),
    revoke: (name, revokedBy) =>
      inTransaction(pool, BEGIN_KEY_CHANGE, async (client) => {
        const { rows } = await client.query<{ hash: string; revoked_at: string | null }>(
          'SELECT hash, revoked_at FROM api_keys WHERE name = $1',
          [name],
        );
        if (rows.length === 0) return 'unknown';
        if (rows[0]!.revoked_at !== null) return 'already revoked';
        const when = at();
        await logKeyEvent(client, 'KeyRevoked', name, rows[0]!.hash, when, revokedBy);
        await client.query('UPDATE api_keys SET revoked_at = $2, revoked_by = $3 WHERE name = $1', [name, when, revokedBy]);
        return 'revoked';
      }),
    async authenticate(key) {
      const { rows } = await pool.query<{ name: string }>('SELECT name FROM api_keys WHERE hash = $1 AND revoked_at IS NULL', [
        hashKey(key),
      ]);
      return rows[0]?.name;
    },
    async list() {
      const { rows } = await pool.query<KeyInfo>(
        `SELECT name, created_at AS "createdAt", created_by AS "createdBy", revoked_at AS "revokedAt", revoked_by AS "revokedBy"
         FROM api_keys ORDER BY created_at, name`,
      );
      return rows;
    },
    async count() {
      const { rows } = await pool.query<{ n: number }>('SELECT count(*)::integer AS n FROM api_keys');
      return rows[0]!.n;
    },
  };
}

/** Every key with its hash, for copying the store. */
export async function keyRecords(pool: pg.Pool): Promise<KeyRecord[]> {
  const { rows } = await pool.query<KeyRecord>(
    `SELECT name, hash, created_at AS "createdAt", created_by AS "createdBy", revoked_at AS "revokedAt", revoked_by AS "revokedBy"
     FROM api_keys ORDER BY created_at, name`,
  );
  return rows;
}
