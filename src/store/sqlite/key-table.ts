// The api_keys table: key hashes and names, never keys. Lookups go by hash, so no
// secret is ever compared byte by byte.
import type { Db } from '../database.ts';
import type { KeyRecord } from '../port.ts';
import { generateKey, hashKey, KEY_NAME_PATTERN, KeyNameTaken, type KeyInfo, type Revocation } from '../keys.ts';

export interface KeyWriter {
  create(name: string, createdBy: string, at: string): string;
  /** Atomic (IMMEDIATE): of several processes starting on one new file, one makes it. */
  createFirst(name: string, createdBy: string, at: string): string | undefined;
  revoke(name: string, revokedBy: string, at: string): Revocation;
}

export function makeKeyWriter(db: Db): KeyWriter {
  const insert = db.prepare('INSERT INTO api_keys (name, hash, created_at, created_by) VALUES (?, ?, ?, ?)');
  const exists = db.prepare('SELECT revoked_at FROM api_keys WHERE name = ?');
  const revoke = db.prepare('UPDATE api_keys SET revoked_at = ?, revoked_by = ? WHERE name = ? AND revoked_at IS NULL');
  const count = db.prepare('SELECT count(*) FROM api_keys').pluck();

  function create(name: string, createdBy: string, at: string): string {
    if (!KEY_NAME_PATTERN.test(name)) throw new Error(`invalid key name "${name}"`);
    const key = generateKey();
    try {
      insert.run(name, hashKey(key), at, createdBy);
    } catch (err) {
      // Taken, also by another process between our look and our insert.
      if ((err as { code?: string }).code?.startsWith('SQLITE_CONSTRAINT') && exists.get(name)) throw new KeyNameTaken(name);
      throw err;
    }
    return key;
  }
  const createFirst = db.transaction((name: string, createdBy: string, at: string) =>
    (count.get() as number) === 0 ? create(name, createdBy, at) : undefined,
  );
  return {
    create,
    createFirst: (name, createdBy, at) => createFirst.immediate(name, createdBy, at),
    revoke(name, revokedBy, at) {
      const row = exists.get(name) as { revoked_at: string | null } | undefined;
      if (!row) return 'unknown';
      if (row.revoked_at) return 'already revoked';
      revoke.run(at, revokedBy, name);
      return 'revoked';
    },
  };
}

export interface KeyReader {
  authenticate(key: string): string | undefined;
  list(): KeyInfo[];
  records(): KeyRecord[];
  count(): number;
}

/** changeToken: changes whenever the database may have changed (makeChangeToken). */
export function makeKeyReader(db: Db, changeToken: () => string): KeyReader {
  const active = db.prepare('SELECT name FROM api_keys WHERE hash = ? AND revoked_at IS NULL').pluck();
  const list = db.prepare(
    `SELECT name, created_at AS createdAt, created_by AS createdBy,
            revoked_at AS revokedAt, revoked_by AS revokedBy
     FROM api_keys ORDER BY created_at, name`,
  );
  const count = db.prepare('SELECT count(*) FROM api_keys').pluck();
  const records = db.prepare(
    `SELECT name, hash, created_at AS createdAt, created_by AS createdBy, revoked_at AS revokedAt, revoked_by AS revokedBy
     FROM api_keys ORDER BY created_at, name`,
  );
  const known = new Map<string, string>();
  let cacheToken = '';
  return {
    authenticate(key) {
      // Active keys are remembered by hash until the database changes in any way (a
      // revocation by another process included), so a revoked key still fails at once.
      const token = changeToken();
      if (token !== cacheToken) {
        known.clear();
        cacheToken = token;
      }
      const hash = hashKey(key);
      let name = known.get(hash);
      if (name === undefined) {
        name = active.get(hash) as string | undefined;
        // Only keys that exist are remembered: random guesses cannot grow the map.
        if (name !== undefined) known.set(hash, name);
      }
      return name;
    },
    list: () => list.all() as KeyInfo[],
    records: () => records.all() as KeyRecord[],
    count: () => count.get() as number,
  };
}
