// The api_keys table: key hashes and names, never keys. Lookups go by hash, so no
// secret is ever compared byte by byte. Every creation and revocation is first entered
// in the key log (api_key_events) with its link in the key chain: the table's triggers
// refuse a key or a revocation without its event.
import type { ChangeToken, Db } from './database.ts';
import { GENESIS_HASH, keyEventHash, type KeyEventType } from '../hash-chain.ts';
import {
  distrustNotices,
  generateKey,
  hashKey,
  KEY_LIST_SQL,
  keyInfo,
  KEY_NAME_PATTERN,
  KEY_TRUST_SQL,
  KeyNameTaken,
  knownKeys,
  scopeData,
  trustedKey,
  type KeyInfo,
  type KeyRecord,
  type KeyScope,
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
  type SigningKeyRetirement,
} from '../signing-keys.ts';

interface KeyWriter {
  create(name: string, createdBy: string, at: string, scope?: KeyScope): string;
  /** Atomic (IMMEDIATE): of several processes starting on one new file, one makes it. */
  createFirst(name: string, createdBy: string, at: string): string | undefined;
  revoke(name: string, revokedBy: string, at: string): Revocation;
  /** Enters an instance's signing key as the log's first, or checks that the log lists
   * it unretired (signingKeyAtStart); throws SigningKeyRefused. */
  startSigning(key: SigningKeyEntry & { keyFile: string; made: boolean }, at: string, actor: string): void;
  addSigningKey(entry: SigningKeyEntry, at: string, actor: string): SigningKeyAddition;
  retireSigningKey(keyId: string, at: string, actor: string): SigningKeyRetirement;
}

export function makeKeyWriter(db: Db): KeyWriter {
  const insert = db.prepare('INSERT INTO api_keys (name, hash, created_at, created_by) VALUES (?, ?, ?, ?)');
  const exists = db.prepare('SELECT revoked_at, hash FROM api_keys WHERE name = ?');
  // A name the key log holds stays taken, even if its api_keys row is gone.
  const logged = db.prepare('SELECT 1 FROM api_key_events WHERE name = ?');
  const revoke = db.prepare('UPDATE api_keys SET revoked_at = ?, revoked_by = ? WHERE name = ? AND revoked_at IS NULL');
  const count = db.prepare('SELECT count(*) FROM api_keys').pluck();
  // The next seq comes from the counter, not from the newest row: after a cut tail the
  // gap stays visible instead of being filled.
  const tip = db.prepare(
    `SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'api_key_events'), 0) AS seq,
            coalesce((SELECT hash FROM api_key_events ORDER BY seq DESC LIMIT 1), ?) AS hash`,
  );
  const insertEvent = db.prepare(
    'INSERT INTO api_key_events (seq, type, name, key_hash, recorded_at, actor, prev_hash, hash, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
  );
  function logKeyEvent(type: KeyEventType, name: string, keyHash: string, at: string, actor: string, data = ''): void {
    const { seq: last, hash: prevHash } = tip.get(GENESIS_HASH) as { seq: number; hash: string };
    const seq = last + 1;
    insertEvent.run(
      seq,
      type,
      name,
      keyHash,
      at,
      actor,
      prevHash,
      keyEventHash({ prevHash, seq, type, name, keyHash, recordedAt: at, actor, data }),
      data,
    );
  }

  const createChained = db.transaction((name: string, keyHash: string, at: string, createdBy: string, scope: KeyScope) => {
    logKeyEvent('KeyCreated', name, keyHash, at, createdBy, scopeData(scope));
    insert.run(name, keyHash, at, createdBy);
  });
  const revokeChained = db.transaction((name: string, keyHash: string, at: string, revokedBy: string) => {
    logKeyEvent('KeyRevoked', name, keyHash, at, revokedBy);
    revoke.run(at, revokedBy, name);
  });

  function create(name: string, createdBy: string, at: string, scope: KeyScope = 'read-write'): string {
    if (!KEY_NAME_PATTERN.test(name)) throw new Error(`invalid key name "${name}"`);
    const key = generateKey();
    try {
      createChained.immediate(name, hashKey(key), at, createdBy, scope);
    } catch (err) {
      // Taken, also by another process between our look and our insert.
      if ((err as { code?: string }).code?.startsWith('SQLITE_CONSTRAINT') && (exists.get(name) || logged.get(name))) {
        throw new KeyNameTaken(name);
      }
      throw err;
    }
    return key;
  }
  const signingKeys = db.prepare(SIGNING_KEYS_SQL);
  const listed = () => (signingKeys.all() as Parameters<typeof signingKeyInfo>[0][]).map(signingKeyInfo);
  const startSigning = db.transaction((key: SigningKeyEntry & { keyFile: string; made: boolean }, at: string, actor: string) => {
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
  const createFirst = db.transaction((name: string, createdBy: string, at: string) =>
    (count.get() as number) === 0 ? create(name, createdBy, at) : undefined,
  );
  return {
    create,
    createFirst: (name, createdBy, at) => createFirst.immediate(name, createdBy, at),
    startSigning: (key, at, actor) => startSigning.immediate(key, at, actor),
    addSigningKey: (entry, at, actor) => addSigningKey.immediate(entry, at, actor),
    retireSigningKey: (keyId, at, actor) => retireSigningKey.immediate(keyId, at, actor),
    revoke(name, revokedBy, at) {
      return db
        .transaction(() => {
          const row = exists.get(name) as { revoked_at: string | null; hash: string } | undefined;
          if (!row) return 'unknown';
          if (row.revoked_at) return 'already revoked';
          revokeChained(name, row.hash, at, revokedBy);
          return 'revoked';
        })
        .immediate();
    },
  };
}

export interface KeyReader {
  /** Asks SQLite whether anything changed first, every time. */
  authenticate(key: string): Principal | undefined;
  /** The same for a request being read: the requests of one turn of the event loop share
   * one question (see below). */
  authenticateRequest(key: string): Principal | undefined;
  onDistrust(listener: (name: string, reason: string) => void): void;
  list(): KeyInfo[];
  records(): KeyRecord[];
  count(): number;
}

/** changes: tells whenever the database may have changed (makeChangeToken). */
export function makeKeyReader(db: Db, changes: ChangeToken): KeyReader {
  const byHash = db.prepare(`${KEY_TRUST_SQL} WHERE k.hash = ?`);
  const list = db.prepare(KEY_LIST_SQL);
  const distrust = distrustNotices();
  const count = db.prepare('SELECT count(*) FROM api_keys').pluck();
  const records = db.prepare(
    `SELECT name, hash, created_at AS createdAt, created_by AS createdBy, revoked_at AS revokedAt, revoked_by AS revokedBy
     FROM api_keys ORDER BY created_at, name`,
  );
  const known = knownKeys();
  let cacheToken = '';
  // The requests read in one turn of the event loop share one question: the first one
  // read in a poll asks, and the immediate queued with the question runs before the loop
  // polls again. The sockets of one poll were ready before it began, so a request sent
  // after a revocation committed reaches a later poll, and a new question. Only requests
  // share a question this way; any other caller (the feed's watcher, on a timer) asks
  // afresh, and its question is never reused by a request.
  let turnToken: string | undefined;
  const endTurn = () => (turnToken = undefined);
  const requestToken = () => {
    if (turnToken === undefined) {
      turnToken = changes.check();
      setImmediate(endTurn);
    }
    return turnToken;
  };
  const judge = (key: string, token: string): Principal | undefined => {
    // Active keys are remembered until the database changes in any way (a revocation by
    // another process included); the question is the one change check of its request or
    // turn, which the list cache then reuses (ChangeToken.current).
    if (token !== cacheToken) {
      known.clear();
      cacheToken = token;
    }
    let principal = known.get(key);
    if (principal === undefined) {
      const row = byHash.get(hashKey(key)) as KeyTrustRow | undefined;
      const verdict = row && trustedKey(row);
      if (verdict && 'distrust' in verdict) distrust.tell(row.name, verdict.distrust);
      else if (verdict) known.add(key, (principal = verdict));
    }
    return principal;
  };
  return {
    authenticate: (key) => judge(key, changes.check()),
    authenticateRequest: (key) => judge(key, requestToken()),
    onDistrust: (listener) => distrust.listen(listener),
    list: () => (list.all() as Parameters<typeof keyInfo>[0][]).map(keyInfo),
    records: () => records.all() as KeyRecord[],
    count: () => count.get() as number,
  };
}
