// API keys. A key is shown once, when it is created; the table keeps only its SHA-256
// hash (a key is 190 random bits, so a fast hash cannot be brute-forced) and its name,
// which the audit log shows as the actor. Lookups go by hash, so no secret is ever
// compared byte by byte; a revoked key stops working at once, in a running service too.
import { createHash, randomBytes } from 'node:crypto';
import type Database from 'better-sqlite3';
import { makeChangeToken } from './database.ts';

export const KEY_PREFIX = 'pinv_';
const KEY_LENGTH = 32; // base62 characters: 32 * log2(62) ≈ 190 bits
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
export const KEY_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

export interface KeyInfo {
  name: string;
  createdAt: string;
  createdBy: string;
  revokedAt: string | null;
  revokedBy: string | null;
}

export class KeyNameTaken extends Error {
  constructor(readonly keyName: string) {
    super(`a key named "${keyName}" exists already (names of revoked keys stay taken)`);
    this.name = 'KeyNameTaken';
  }
}

export interface KeyStore {
  create(name: string, createdBy: string): string;
  /** Creates a key only if none was ever created (atomically: one of several starting
   * processes wins); returns it, or undefined when keys exist. */
  createFirst(name: string, createdBy: string): string | undefined;
  list(): KeyInfo[];
  revoke(name: string, revokedBy: string): 'revoked' | 'already revoked' | 'unknown';
  /** The name of the active key, or undefined for an unknown or revoked one. */
  authenticate(key: string): string | undefined;
  /** How many keys were ever created, revoked ones included. */
  count(): number;
}

export function generateKey(): string {
  let key = KEY_PREFIX;
  while (key.length < KEY_PREFIX.length + KEY_LENGTH) {
    for (const byte of randomBytes(KEY_LENGTH)) {
      // 248 = 4 * 62: rejecting bytes above it keeps every character equally likely.
      if (byte < 248 && key.length < KEY_PREFIX.length + KEY_LENGTH) key += ALPHABET[byte % 62];
    }
  }
  return key;
}

export function hashKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

export function makeKeyStore(db: Database.Database, deps: { now: () => number }): KeyStore {
  const insert = db.prepare(
    'INSERT INTO api_keys (name, hash, created_at, created_by) VALUES (?, ?, ?, ?)',
  );
  const exists = db.prepare('SELECT revoked_at FROM api_keys WHERE name = ?');
  const revoke = db.prepare(
    'UPDATE api_keys SET revoked_at = ?, revoked_by = ? WHERE name = ? AND revoked_at IS NULL',
  );
  const active = db.prepare('SELECT name FROM api_keys WHERE hash = ? AND revoked_at IS NULL').pluck();
  const list = db.prepare(
    `SELECT name, created_at AS createdAt, created_by AS createdBy,
            revoked_at AS revokedAt, revoked_by AS revokedBy
     FROM api_keys ORDER BY created_at, name`,
  );
  const count = db.prepare('SELECT count(*) FROM api_keys').pluck();
  const timestamp = () => new Date(deps.now()).toISOString();
  const changeToken = makeChangeToken(db);
  const known = new Map<string, string>();
  let cacheToken = '';

  function create(name: string, createdBy: string): string {
    if (!KEY_NAME_PATTERN.test(name)) throw new Error(`invalid key name "${name}"`);
    const key = generateKey();
    try {
      insert.run(name, hashKey(key), timestamp(), createdBy);
    } catch (err) {
      // Taken, also by another process between our look and our insert.
      if ((err as { code?: string }).code?.startsWith('SQLITE_CONSTRAINT') && exists.get(name)) throw new KeyNameTaken(name);
      throw err;
    }
    return key;
  }
  const createFirst = db.transaction((name: string, createdBy: string) =>
    (count.get() as number) === 0 ? create(name, createdBy) : undefined,
  );

  return {
    create,
    createFirst: (name, createdBy) => createFirst.immediate(name, createdBy),
    list: () => list.all() as KeyInfo[],
    revoke(name, revokedBy) {
      const row = exists.get(name) as { revoked_at: string | null } | undefined;
      if (!row) return 'unknown';
      if (row.revoked_at) return 'already revoked';
      revoke.run(timestamp(), revokedBy, name);
      return 'revoked';
    },
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
    count: () => count.get() as number,
  };
}
