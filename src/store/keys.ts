// API keys. A key is shown once, when it is created; the table keeps only its SHA-256
// hash (a key is 190 random bits, so a fast hash cannot be brute-forced) and its name,
// which the audit log shows as the actor. Lookups go by hash, so no secret is ever
// compared byte by byte; a revoked key stops working at once, in a running service too.
// This module holds what every adapter shares; the tables live with the adapter.
import { createHash, randomBytes } from 'node:crypto';
import { GENESIS_HASH, keyEventHash } from './hash-chain.ts';

/** A key as the database keeps it: its hash, never the key. Only copy-store reads these. */
export interface KeyRecord {
  name: string;
  hash: string;
  createdAt: string;
  createdBy: string;
  revokedAt: string | null;
  revokedBy: string | null;
}

/** A row of the key log (api_key_events) with its chain columns, as verify-log reads it. */
export type KeyChainRow = [
  seq: bigint,
  type: string,
  name: string,
  keyHash: string,
  recordedAt: string,
  actor: string,
  prevHash: string,
  hash: string,
  /** '' for none; a read-only key's KeyCreated: {"scope":"read-only"}. */
  data: string,
];

const KEY_PREFIX = 'pinv_';
const KEY_LENGTH = 32; // base62 characters: 32 * log2(62) ≈ 190 bits
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
export const KEY_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** What a key may do: read-only keys read all a key can read and write nothing. */
export type KeyScope = 'read-write' | 'read-only';

/** Who a valid key is: its name (the actor of its events) and its scope. */
export interface Principal {
  name: string;
  scope: KeyScope;
}

export interface KeyInfo {
  name: string;
  /** As its KeyCreated in the key log says ('unknown': data this version cannot read). */
  scope: KeyScope | 'unknown';
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
  create(name: string, createdBy: string, scope?: KeyScope): Promise<string>;
  /** Creates a key only if none was ever created (atomically: one of several starting
   * processes wins); returns it, or undefined when keys exist. */
  createFirst(name: string, createdBy: string): Promise<string | undefined>;
  list(): Promise<KeyInfo[]>;
  revoke(name: string, revokedBy: string): Promise<Revocation>;
  /** The active key's name and scope, or undefined for an unknown or revoked one, or
   * one the key log does not describe as active (trustedKey). A revoked key fails at the
   * next request, whoever revoked it. */
  authenticate(key: string): Promise<Principal | undefined>;
  /** authenticate's answer when it can be given from memory, without waiting: the
   * principal, null for a key that is refused, undefined when only authenticate can
   * tell. Held to the same promise: a revoked key fails at once (PostgreSQL: within
   * 100 ms). */
  authenticateFromMemory(key: string): Principal | null | undefined;
  /** Told of each api_keys row that presents itself as active but that the key log does
   * not describe so (changed behind the triggers), once per key and reason. */
  onDistrust?(listener: (name: string, reason: string) => void): void;
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
  const names = new Map<string, Principal>();
  return {
    get: (key: string) => names.get(key),
    add(key: string, name: Principal) {
      if (names.size >= KNOWN_KEYS_LIMIT) names.clear();
      names.set(key, name);
    },
    clear: () => names.clear(),
  };
}

/** A read-only key's KeyCreated data; a key that may write has none. */
const READ_ONLY_DATA = '{"scope":"read-only"}';

export function scopeData(scope: KeyScope): string {
  return scope === 'read-only' ? READ_ONLY_DATA : '';
}

/** The scope a KeyCreated's data gives; undefined for data this code does not know. */
export function scopeOf(data: string): KeyScope | undefined {
  if (data === '') return 'read-write';
  return data === READ_ONLY_DATA ? 'read-only' : undefined;
}

/** The keys as `scripts/keys list` shows them, with the data of their KeyCreated. */
export const KEY_LIST_SQL = `SELECT k.name, k.created_at AS "createdAt", k.created_by AS "createdBy",
       k.revoked_at AS "revokedAt", k.revoked_by AS "revokedBy", c.data
FROM api_keys k LEFT JOIN api_key_events c ON c.type = 'KeyCreated' AND c.name = k.name
ORDER BY k.created_at, k.name`;

export function keyInfo({ data, ...row }: Omit<KeyInfo, 'scope'> & { data: string | null }): KeyInfo {
  return { ...row, scope: scopeOf(data ?? '') ?? 'unknown' };
}

/** A key's api_keys row and what the key log says of it (KEY_TRUST_SQL's columns). */
export interface KeyTrustRow {
  name: string;
  hash: string;
  createdAt: string;
  createdBy: string;
  revokedAt: string | null;
  /** Its KeyCreated event, null when the key log has none of this name. */
  seq: string | number | bigint | null;
  keyHash: string | null;
  recordedAt: string | null;
  actor: string | null;
  prevHash: string | null;
  eventHash: string | null;
  data: string | null;
  /** The hash of the key event before its KeyCreated (null for the first or none). */
  linkHash: string | null;
  /** Whether the key log holds a KeyRevoked of this name. */
  revokedInLog: number | boolean;
}

/** Each api_keys row with its KeyCreated, the event that KeyCreated links to, and whether
 * the key log revoked it; the same text on both databases. Add a WHERE on k. */
export const KEY_TRUST_SQL = `SELECT k.name, k.hash, k.created_at AS "createdAt", k.created_by AS "createdBy",
       k.revoked_at AS "revokedAt", c.seq, c.key_hash AS "keyHash", c.recorded_at AS "recordedAt",
       c.actor, c.prev_hash AS "prevHash", c.hash AS "eventHash", c.data, p.hash AS "linkHash",
       EXISTS (SELECT 1 FROM api_key_events r WHERE r.type = 'KeyRevoked' AND r.name = k.name) AS "revokedInLog"
FROM api_keys k
LEFT JOIN api_key_events c ON c.type = 'KeyCreated' AND c.name = k.name
LEFT JOIN api_key_events p ON p.seq = c.seq - 1`;

/**
 * A key is trusted only as the chained key log describes it: its row must be active and
 * match a KeyCreated that hashes as it should and links to the event before it, and the
 * key log must hold no KeyRevoked for it. Returns the principal, or why an active row is
 * refused (a row inserted, recreated or un-revoked behind the triggers), or undefined for
 * a row revoked in both.
 */
export function trustedKey(row: KeyTrustRow): Principal | { distrust: string } | undefined {
  if (row.revokedAt !== null) return undefined;
  if (row.revokedInLog) return { distrust: 'the key log revoked it: it was un-revoked behind the triggers' };
  if (row.seq === null || row.keyHash !== row.hash || row.recordedAt !== row.createdAt || row.actor !== row.createdBy) {
    return { distrust: 'the key log has no KeyCreated for this key: it was inserted or recreated behind the triggers' };
  }
  const seq = BigInt(row.seq);
  const expected = keyEventHash({
    prevHash: row.prevHash!,
    seq,
    type: 'KeyCreated',
    name: row.name,
    keyHash: row.keyHash,
    recordedAt: row.recordedAt,
    actor: row.actor,
    data: row.data ?? '',
  });
  if (row.eventHash !== expected || row.prevHash !== (seq === 1n ? GENESIS_HASH : row.linkHash)) {
    return { distrust: 'its KeyCreated is not chained into the key log' };
  }
  const scope = scopeOf(row.data ?? '');
  if (scope === undefined) return { distrust: 'its KeyCreated gives a scope this version does not know' };
  return { name: row.name, scope };
}

/** Tells a listener of each distrusted key once per reason (onDistrust). */
export function distrustNotices() {
  let listener: ((name: string, reason: string) => void) | undefined;
  const told = new Set<string>();
  return {
    listen(l: (name: string, reason: string) => void) {
      listener = l;
    },
    tell(name: string, reason: string) {
      const id = `${name}\n${reason}`;
      if (told.has(id) || told.size >= 1_024) return;
      told.add(id);
      listener?.(name, reason);
    },
  };
}
