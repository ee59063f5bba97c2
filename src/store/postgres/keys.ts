// The api_keys table on PostgreSQL: hashes and names, never keys. authenticate asks the
// database every time, so a key revoked through any instance fails at the next request
// in every instance.
import type pg from 'pg';
import { generateKey, hashKey, KEY_NAME_PATTERN, KeyNameTaken, type KeyInfo, type KeyStore } from '../keys.ts';
import type { KeyRecord } from '../port.ts';
import { inTransaction } from './connection.ts';

const FIRST_KEY_LOCK = 'petstore-inventory/first-key';

async function insertKey(db: pg.Pool | pg.ClientBase, name: string, createdBy: string, at: string): Promise<string> {
  if (!KEY_NAME_PATTERN.test(name)) throw new Error(`invalid key name "${name}"`);
  const key = generateKey();
  try {
    await db.query('INSERT INTO api_keys (name, hash, created_at, created_by) VALUES ($1, $2, $3, $4)', [
      name,
      hashKey(key),
      at,
      createdBy,
    ]);
  } catch (error) {
    const { code, constraint } = error as { code?: string; constraint?: string };
    if (code === '23505' && constraint === 'api_keys_pkey') throw new KeyNameTaken(name);
    throw error;
  }
  return key;
}

export function makeKeys(pool: pg.Pool, now: () => number): KeyStore {
  const at = () => new Date(now()).toISOString();
  return {
    create: (name, createdBy) => insertKey(pool, name, createdBy, at()),
    // Instances starting together on an empty database take turns here (an advisory
    // lock held to COMMIT): the first makes the key, the others then see it.
    createFirst: (name, createdBy) =>
      inTransaction(pool, 'BEGIN', async (client) => {
        await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [FIRST_KEY_LOCK]);
        const { rows } = await client.query<{ any: boolean }>('SELECT EXISTS (SELECT 1 FROM api_keys) AS any');
        return rows[0]!.any ? undefined : insertKey(client, name, createdBy, at());
      }),
    async revoke(name, revokedBy) {
      const { rows } = await pool.query<{ state: string }>(
        `WITH target AS (SELECT name, revoked_at FROM api_keys WHERE name = $1),
              done AS (UPDATE api_keys SET revoked_at = $2, revoked_by = $3 WHERE name = $1 AND revoked_at IS NULL RETURNING name)
         SELECT CASE WHEN EXISTS (SELECT 1 FROM done) THEN 'revoked'
                     WHEN EXISTS (SELECT 1 FROM target) THEN 'already revoked'
                     ELSE 'unknown' END AS state`,
        [name, at(), revokedBy],
      );
      return rows[0]!.state as 'revoked' | 'already revoked' | 'unknown';
    },
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
