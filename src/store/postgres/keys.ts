// The api_keys table on PostgreSQL: hashes and names, never keys. Each instance holds the
// active keys in memory and authenticates from there while its notification connection
// proves current (changes.ts keysSeq: every key change NOTIFYs its seq in the key chain,
// and a heartbeat sent within KEYS_FRESH_MS came back); the memory is read again from
// the database as soon as a newer seq is heard. A row edited behind the triggers
// announces nothing: each heartbeat also reads a digest of the key tables (keysRead),
// and memory is trusted only while it was read at that digest, read again when it
// differs (key-memory.ts). Otherwise (the connection down, a heartbeat late)
// authenticate asks the database every time (key-lookup.ts). So a key revoked, or
// edited, through any instance fails in every instance within KEYS_FRESH_MS, in the
// revoking instance at its next request. Every creation and revocation is entered in the
// key log (api_key_events, key-log.ts) first, chained under the key chain's head, which
// each key change locks: the table's triggers refuse a key or a revocation without its
// event.
import type pg from 'pg';
import { KEY_LIST_SQL, keyInfo, type KeyRecord, type KeyStore } from '../keys.ts';
import { BEGIN_KEY_CHANGE, insertFirstKey, insertKey, revokeKey } from './key-log.ts';
import { makeKeyLookup } from './key-lookup.ts';
import { makeKeyMemory, type KeyWatch } from './key-memory.ts';
import { inTransaction } from './transactions.ts';

/** watch: the notification connection, which says when the keys in memory are current
 * (without it every authentication asks the database). */
export function makeKeys(pool: pg.Pool, now: () => number, watch?: KeyWatch): KeyStore {
  const at = () => new Date(now()).toISOString();
  const lookup = makeKeyLookup(pool);
  /** After a key change of ours commits: our own next request must see it. */
  const changed = <T>([result, seq]: [T, bigint | undefined]): T => {
    if (seq !== undefined) watch?.sawKeys(seq);
    return result;
  };
  const change = <T>(work: (client: pg.ClientBase) => Promise<[T, bigint | undefined]>) =>
    inTransaction(pool, BEGIN_KEY_CHANGE, work).then(changed);
  return {
    create: (name, createdBy, scope) => change((client) => insertKey(client, name, createdBy, at(), scope)),
    createFirst: (name, createdBy) => change((client) => insertFirstKey(client, name, createdBy, at())),
    revoke: (name, revokedBy) => change((client) => revokeKey(client, name, revokedBy, at())),
    ...makeKeyMemory(pool, lookup, watch),
    onDistrust: lookup.onDistrust,
    async list() {
      const { rows } = await pool.query<Parameters<typeof keyInfo>[0]>(KEY_LIST_SQL);
      return rows.map(keyInfo);
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
