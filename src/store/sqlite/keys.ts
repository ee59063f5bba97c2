// The api_keys table: key hashes and names, never keys. Lookups go by hash, so no
// secret is ever compared byte by byte. Every creation and revocation is first entered
// in the key log (key-log.ts) with its link in the key chain: the table's triggers
// refuse a key or a revocation without its event.
import type { Db } from './database.ts';
import { generateKey, hashKey, KEY_NAME_PATTERN, KeyNameTaken, scopeData, type KeyScope, type Revocation } from '../keys.ts';
import { makeKeyLog } from './key-log.ts';
import { makeSigningKeyWriter, type SigningKeyWriter } from './writer/signing-key-writes.ts';

interface KeyWriter extends SigningKeyWriter {
  create(name: string, createdBy: string, at: string, scope?: KeyScope): string;
  /** Atomic (IMMEDIATE): of several processes starting on one new file, one makes it. */
  createFirst(name: string, createdBy: string, at: string): string | undefined;
  revoke(name: string, revokedBy: string, at: string): Revocation;
}

export function makeKeyWriter(db: Db): KeyWriter {
  const insert = db.prepare('INSERT INTO api_keys (name, hash, created_at, created_by) VALUES (?, ?, ?, ?)');
  const exists = db.prepare('SELECT revoked_at, hash FROM api_keys WHERE name = ?');
  // A name the key log holds stays taken, even if its api_keys row is gone.
  const logged = db.prepare('SELECT 1 FROM api_key_events WHERE name = ?');
  const revoke = db.prepare('UPDATE api_keys SET revoked_at = ?, revoked_by = ? WHERE name = ? AND revoked_at IS NULL');
  const count = db.prepare('SELECT count(*) FROM api_keys').pluck();
  const logKeyEvent = makeKeyLog(db);

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
  const createFirst = db.transaction((name: string, createdBy: string, at: string) =>
    (count.get() as number) === 0 ? create(name, createdBy, at) : undefined,
  );
  return {
    create,
    createFirst: (name, createdBy, at) => createFirst.immediate(name, createdBy, at),
    ...makeSigningKeyWriter(db, logKeyEvent),
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
