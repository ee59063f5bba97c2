// The api_keys table on PostgreSQL: hashes and names, never keys. Each instance holds the
// active keys in memory and authenticates from there while its notification connection
// proves current (changes.ts keysSeq: every key change NOTIFYs its seq in the key chain,
// and a heartbeat sent within KEYS_FRESH_MS came back); the memory is read again from
// the database as soon as a newer seq is heard. A row edited behind the triggers
// announces nothing: each heartbeat also reads a digest of the key tables (keysRead),
// and memory is trusted only while it was read at that digest, read again when it
// differs. Otherwise (the connection down, a heartbeat late) authenticate asks the
// database every time. So a key revoked, or edited, through any instance fails in every
// instance within KEYS_FRESH_MS, in the revoking instance at its next request. Every
// creation and revocation is entered in the key log (api_key_events) first, chained
// under the key chain's head, which each key change locks: the table's triggers refuse a
// key or a revocation without its event.
import type pg from 'pg';
import { keyEventHash, type KeyEventType } from '../hash-chain.ts';
import {
  distrustNotices,
  generateKey,
  hashKey,
  KEY_LIST_SQL,
  KEY_NAME_PATTERN,
  KEY_TRUST_SQL,
  keyInfo,
  KeyNameTaken,
  knownKeys,
  scopeData,
  trustedKey,
  type KeyRecord,
  type KeyScope,
  type KeyStore,
  type KeyTrustRow,
  type Principal,
  type Revocation,
} from '../keys.ts';
import {
  SIGNING_KEYS_SQL,
  signingKeyAtStart,
  signingKeyInfo,
  type SigningKeyAddition,
  type SigningKeyEntry,
  type SigningKeyInfo,
  type SigningKeyLog,
  type SigningKeyRetirement,
} from '../signing-keys.ts';
import { KEYS_CHANNEL, KEYS_DIGEST_SQL, type ChangeWatch } from './changes.ts';
import type { Probe } from './listener-heartbeat.ts';
import { inTransaction } from './transactions.ts';

const FIRST_KEY_LOCK = 'petstore-inventory/first-key';
const BEGIN_KEY_CHANGE = 'BEGIN; SELECT seq, hash FROM key_chain_head FOR UPDATE';

/** Appends a key event after the head that the transaction holds, and moves the head; tells
 * every instance at COMMIT (NOTIFY with the new seq). Returns the new seq. */
async function logKeyEvent(
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
async function insertKey(
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

/** Signing keys as the key log lists them, read inside the transaction that holds the key chain's head. */
async function listedSigningKeys(client: pg.ClientBase): Promise<SigningKeyInfo[]> {
  const { rows } = await client.query<Parameters<typeof signingKeyInfo>[0]>(SIGNING_KEYS_SQL);
  return rows.map(signingKeyInfo);
}

/** Enters an instance's signing key as the log's first, or checks that the log lists it
 * unretired (signingKeyAtStart): of several instances starting together on a log without
 * keys, one enters its key and the others are judged after it. */
export async function startSigning(
  pool: pg.Pool,
  key: SigningKeyEntry & { keyFile: string; made: boolean },
  at: string,
  actor: string,
): Promise<void> {
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

// The active keys with what the key log says of them, and the seq and digest they are
// current at, in one statement: one snapshot.
const ACTIVE_KEYS = `SELECT h.seq::text AS "headSeq", (${KEYS_DIGEST_SQL}) AS digest, k.*
  FROM key_chain_head h LEFT JOIN (${KEY_TRUST_SQL} WHERE k.revoked_at IS NULL) AS k ON true`;
const KEY_BY_HASH = `${KEY_TRUST_SQL} WHERE k.hash = $1`;

/** The keys the key log vouches for in memory (by hash), the key chain's seq and the key
 * tables' digest they are current at, and the heartbeat's reading they were read after. */
interface KeyMemory {
  seq: bigint;
  digest: string;
  after: Probe | undefined;
  names: Map<string, Principal>;
}

/** watch: the notification connection, which says when the keys in memory are current
 * (without it every authentication asks the database). */
export function makeKeys(pool: pg.Pool, now: () => number, watch?: Pick<ChangeWatch, 'keysSeq' | 'keysRead' | 'sawKeys'>): KeyStore {
  const at = () => new Date(now()).toISOString();
  let memory: KeyMemory | undefined;
  // Active keys by the key as presented (no hash), for the keys now in memory.
  const known = knownKeys();
  let loading: Promise<void> | undefined;
  const distrust = distrustNotices();
  /** The principal of an api_keys row, telling of a row the key log does not vouch for. */
  const judge = (row: KeyTrustRow): Principal | undefined => {
    const verdict = trustedKey(row);
    if (verdict && 'distrust' in verdict) distrust.tell(row.name, verdict.distrust);
    else return verdict;
    return undefined;
  };
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
        const principal = row.hash === null ? undefined : judge(row);
        if (principal) names.set(row.hash, principal);
      }
      memory = { seq, digest, after, names };
      known.clear();
    })().finally(() => (loading = undefined)));
  const byHash = async (hash: string): Promise<Principal | undefined> => {
    const { rows } = await pool.query<KeyTrustRow>(KEY_BY_HASH, [hash]);
    return rows[0] && judge(rows[0]);
  };
  // A key refused from memory may be a row added behind the triggers, which no key change
  // announced: it is looked up after the answer (one look at a time, others skipped), so
  // that the warning names it.
  let looking = false;
  const lookAtRefused = (hash: string) => {
    if (looking) return;
    looking = true;
    byHash(hash)
      .catch(() => undefined)
      .finally(() => (looking = false));
  };
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
      else lookAtRefused(hash);
    }
    return principal ?? null;
  };
  /** After a key change of ours commits: our own next request must see it. */
  const changed = <T>([result, seq]: [T, bigint | undefined]): T => {
    if (seq !== undefined) watch?.sawKeys(seq);
    return result;
  };
  return {
    create: async (name, createdBy, scope) =>
      changed(await inTransaction(pool, BEGIN_KEY_CHANGE, (client) => insertKey(client, name, createdBy, at(), scope))),
    // Instances starting together on an empty database take turns here (an advisory
    // lock held to COMMIT): the first makes the key, the others then see it.
    createFirst: async (name, createdBy) =>
      changed(
        await inTransaction(pool, BEGIN_KEY_CHANGE, async (client): Promise<[string | undefined, bigint | undefined]> => {
          await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [FIRST_KEY_LOCK]);
          const { rows } = await client.query<{ any: boolean }>('SELECT EXISTS (SELECT 1 FROM api_keys) AS any');
          return rows[0]!.any ? [undefined, undefined] : insertKey(client, name, createdBy, at());
        }),
      ),
    revoke: async (name, revokedBy) =>
      changed(
        await inTransaction(pool, BEGIN_KEY_CHANGE, async (client): Promise<[Revocation, bigint | undefined]> => {
          const { rows } = await client.query<{ hash: string; revoked_at: string | null }>(
            'SELECT hash, revoked_at FROM api_keys WHERE name = $1',
            [name],
          );
          if (rows.length === 0) return ['unknown', undefined];
          if (rows[0]!.revoked_at !== null) return ['already revoked', undefined];
          const when = at();
          const seq = await logKeyEvent(client, 'KeyRevoked', name, rows[0]!.hash, when, revokedBy);
          await client.query('UPDATE api_keys SET revoked_at = $2, revoked_by = $3 WHERE name = $1', [name, when, revokedBy]);
          return ['revoked', seq];
        }),
      ),
    verdictNow: fromMemory,
    onDistrust: (listener) => distrust.listen(listener),
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
      return byHash(hashKey(key));
    },
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
