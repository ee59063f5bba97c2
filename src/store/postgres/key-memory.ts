// The active keys held in memory, trusted only while the notification connection proves
// them current: read at the key chain's seq heard last and at the key tables' digest that
// a heartbeat sent within KEYS_FRESH_MS read (changes.ts). Otherwise every authentication
// asks the database.
import type pg from 'pg';
import { hashKey, KEY_TRUST_SQL, knownKeys, type KeyStore, type KeyTrustRow, type Principal } from '../keys.ts';
import { KEYS_DIGEST_SQL, type ChangeWatch } from './changes.ts';
import type { KeyLookup } from './key-lookup.ts';
import type { Probe } from './listener-heartbeat.ts';

// The active keys with what the key log says of them, and the seq and digest they are
// current at, in one statement: one snapshot.
const ACTIVE_KEYS = `SELECT h.seq::text AS "headSeq", (${KEYS_DIGEST_SQL}) AS digest, k.*
  FROM key_chain_head h LEFT JOIN (${KEY_TRUST_SQL} WHERE k.revoked_at IS NULL) AS k ON true`;

/** The keys the key log vouches for in memory (by hash), the key chain's seq and the key
 * tables' digest they are current at, and the heartbeat's reading they were read after. */
interface RememberedKeys {
  seq: bigint;
  digest: string;
  after: Probe | undefined;
  names: Map<string, Principal>;
}

export type KeyWatch = Pick<ChangeWatch, 'keysSeq' | 'keysRead' | 'sawKeys'>;

/** watch: the notification connection, which says when the keys in memory are current. */
export function makeKeyMemory(
  pool: pg.Pool,
  lookup: KeyLookup,
  watch?: KeyWatch,
): Pick<KeyStore, 'authenticateFromMemory' | 'authenticate'> {
  let memory: RememberedKeys | undefined;
  // Active keys by the key as presented (no hash), for the keys now in memory.
  const known = knownKeys();
  let loading: Promise<void> | undefined;
  // One read at a time, shared by the requests that wait for it.
  // after: the heartbeat's reading this read follows (it reads what that one read, or newer).
  const load = (after: Probe | undefined) =>
    (loading ??= (async () => {
      const { rows } = await pool.query<KeyTrustRow & { headSeq: string; digest: string }>(ACTIVE_KEYS);
      const seq = BigInt(rows[0]!.headSeq);
      const digest = rows[0]!.digest;
      if (memory && memory.seq === seq && memory.digest === digest) {
        memory.after = after;
        return;
      }
      const names = new Map<string, Principal>();
      for (const row of rows) {
        const principal = row.hash === null ? undefined : lookup.judge(row);
        if (principal) names.set(row.hash, principal);
      }
      memory = { seq, digest, after, names };
      known.clear();
    })().finally(() => (loading = undefined)));
  /** The principal from memory, null when refused; undefined unless memory is current now. */
  const fromMemory = (key: string): Principal | null | undefined => {
    const heard = watch?.keysSeq();
    const read = watch?.keysRead();
    if (heard === undefined || read === undefined || memory === undefined) return undefined;
    if (memory.seq < heard || memory.digest !== read.value) return undefined;
    let principal = known.get(key);
    if (principal === undefined) {
      const hash = hashKey(key);
      principal = memory.names.get(hash);
      if (principal !== undefined) known.add(key, principal);
      else lookup.lookAtRefused(hash);
    }
    return principal ?? null;
  };
  return {
    authenticateFromMemory: fromMemory,
    async authenticate(key) {
      const heard = watch?.keysSeq();
      const read = watch?.keysRead();
      // A reading that differs from memory is a reason to read once: a later reading may
      // still show the state before a change of ours that memory holds already.
      const differs = read !== undefined && memory !== undefined && memory.digest !== read.value && memory.after !== read;
      if (heard !== undefined && (memory === undefined || memory.seq < heard || differs)) await load(read);
      const remembered = fromMemory(key);
      if (remembered !== undefined) return remembered ?? undefined;
      // Notifications are not proven current (or the read was older than what we heard).
      return lookup.byHash(hashKey(key));
    },
  };
}
