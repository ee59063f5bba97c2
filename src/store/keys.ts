// API keys. A key is shown once, when it is created; the table keeps only its SHA-256
// hash (a key is 190 random bits, so a fast hash cannot be brute-forced) and its name,
// which the audit log shows as the actor. Lookups go by hash, so no secret is ever
// compared byte by byte; a revoked key stops working at once, in a running service too.
// This module holds what every adapter shares; the tables live with the adapter.
import { createHash, randomBytes } from 'node:crypto';

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

export type Revocation = 'revoked' | 'already revoked' | 'unknown';

/** The keys part of the storage port (port.ts). */
export interface KeyStore {
  create(name: string, createdBy: string): Promise<string>;
  /** Creates a key only if none was ever created (atomically: one of several starting
   * processes wins); returns it, or undefined when keys exist. */
  createFirst(name: string, createdBy: string): Promise<string | undefined>;
  list(): Promise<KeyInfo[]>;
  revoke(name: string, revokedBy: string): Promise<Revocation>;
  /** The name of the active key, or undefined for an unknown or revoked one. A revoked
   * key fails at the next request, whoever revoked it. */
  authenticate(key: string): Promise<string | undefined>;
  /** authenticate's answer when it can be given from memory, without waiting: the name,
   * null for a key that is refused, undefined when only authenticate can tell. Held to
   * the same promise: a revoked key fails at once (PostgreSQL: within 100 ms). */
  verdictNow?(key: string): string | null | undefined;
  /** How many keys were ever created, revoked ones included. */
  count(): Promise<number>;
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

/** How many active keys a process remembers by the key itself (knownKeys). */
const KNOWN_KEYS_LIMIT = 1_024;

/**
 * The names of active keys, remembered by the key as presented so that a known key costs
 * no hash. The keys stay in this process's memory: never logged, never sent. Only keys
 * found active are added (random guesses cannot grow it), at most KNOWN_KEYS_LIMIT
 * (then it starts again empty); the owner clears it whenever a key may have changed.
 */
export function knownKeys() {
  const names = new Map<string, string>();
  return {
    get: (key: string) => names.get(key),
    add(key: string, name: string) {
      if (names.size >= KNOWN_KEYS_LIMIT) names.clear();
      names.set(key, name);
    },
    clear: () => names.clear(),
  };
}
