// The key reads: a bearer key judged by its hash (never compared byte by byte), active
// keys remembered until the database changes, and the lists of keys.
import type { ChangeToken, Db } from '../database.ts';
import {
  distrustNotices,
  hashKey,
  KEY_LIST_SQL,
  keyInfo,
  KEY_TRUST_SQL,
  knownKeys,
  trustedKey,
  type KeyInfo,
  type KeyRecord,
  type KeyTrustRow,
  type Principal,
} from '../../keys.ts';

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
