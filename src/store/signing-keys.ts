// The signing keys in the key log, as every adapter shares them. A log's first key is
// entered by the service that signs with it; every later key by an operator, with the
// endorsement a key already trusted signed for it (a signed note, kept in its
// SigningKeyAdded's data, so that the key chain covers it), or saying loudly that it has
// none. A key is retired by a chained SigningKeyRetired. Whether an instance may sign
// with its key is decided here, the same on both databases.
import { makeSigner, type SigningKeyData } from '../support/signing.ts';

/** A signing key as the key log records it: publicKey is the raw 32 bytes, base64url. */
export interface SigningKeyInfo {
  keyId: string;
  publicKey: string;
  addedAt: string;
  retiredAt: string | null;
  /** The endorsement note by a key already trusted; null for the log's first key and an unendorsed one. */
  endorsedBy: string | null;
  /** Its SigningKeyAdded says it was entered unendorsed (scripts/keys add-signing --unendorsed). */
  unendorsed: boolean;
}

/** A key to enter: its id, its raw public key (base64url) and its SigningKeyAdded's data. */
export interface SigningKeyEntry {
  keyId: string;
  publicKey: string;
  data: string;
}

export type SigningKeyAddition = 'added' | 'listed already';
export type SigningKeyRetirement = 'retired' | 'already retired' | 'unknown';

/** The key log's signing keys, as operators change them (scripts/keys). */
export interface SigningKeyLog {
  /** Enters the key unless the key log lists it already. */
  addSigningKey(entry: SigningKeyEntry, actor: string): Promise<SigningKeyAddition>;
  retireSigningKey(keyId: string, actor: string): Promise<SigningKeyRetirement>;
}

/** The SigningKeyAdded data of a key endorsed by the note. */
export function endorsedData(note: string): string {
  return JSON.stringify({ endorsedBy: note });
}

/** The SigningKeyAdded data of a key no trusted key vouches for: said in the key log itself. */
export const UNENDORSED_DATA = JSON.stringify({
  unendorsed: 'added without an endorsement (scripts/keys add-signing --unendorsed): untrusted until an auditor pins it',
});

/** The endorsement a SigningKeyAdded's data holds, or null. */
function endorsementOf(data: string | null): string | null {
  if (!data) return null;
  try {
    const parsed = JSON.parse(data) as { endorsedBy?: unknown };
    return typeof parsed.endorsedBy === 'string' ? parsed.endorsedBy : null;
  } catch {
    // Data that is no JSON holds no endorsement; verify-log says what that key lacks.
    return null;
  }
}

/** Each SigningKeyAdded with its retirement, by seq; the same text on both databases. */
export const SIGNING_KEYS_SQL = `SELECT a.name AS "keyId", a.key_hash AS "publicKey", a.recorded_at AS "addedAt",
       r.recorded_at AS "retiredAt", a.data
FROM api_key_events a
LEFT JOIN api_key_events r ON r.type = 'SigningKeyRetired' AND r.name = a.name
WHERE a.type = 'SigningKeyAdded' ORDER BY a.seq`;

export function signingKeyInfo({
  data,
  ...row
}: Omit<SigningKeyInfo, 'endorsedBy' | 'unendorsed'> & { data: string | null }): SigningKeyInfo {
  return { ...row, retiredAt: row.retiredAt ?? null, endorsedBy: endorsementOf(data), unendorsed: data === UNENDORSED_DATA };
}

/** An instance's key as it starts: its entry, the file it is in, and that file's state. */
export interface KeyAtStart extends SigningKeyEntry {
  keyFile: string;
  /** The file did not exist and was made for this start. */
  made: boolean;
  /** Whether `<key file>.signed` was beside it (undefined: not looked at, as by tools that sign nothing). */
  signedState: boolean | undefined;
}

export function keyAtStart(key: SigningKeyData): KeyAtStart {
  const signer = makeSigner(key);
  return {
    keyId: signer.keyId,
    publicKey: signer.publicKey,
    data: '',
    keyFile: key.file ?? 'the signing key',
    made: key.made === true,
    signedState: key.signedState,
  };
}

/** Why an instance may not sign with its key; the start fails with its message, in one line. */
export class SigningKeyRefused extends Error {
  override name = 'SigningKeyRefused';
}

/**
 * What a starting instance does with its key: enter it ('add', only on a log without
 * keys), sign with it ('use', a key the log lists and has not retired, whose record of
 * what it signed is beside it), or be refused. A key the log lists without that record
 * (copied to another host, or restored, without it) could sign a tree that disagrees
 * with one it published: only a log's first key, entered now, starts without one.
 */
export function signingKeyAtStart(
  listed: readonly Pick<SigningKeyInfo, 'keyId' | 'retiredAt'>[],
  key: Pick<KeyAtStart, 'keyId' | 'keyFile' | 'made' | 'signedState'>,
): 'add' | 'use' | SigningKeyRefused {
  if (listed.length === 0) return 'add';
  const endorse = `scripts/keys endorse-signing NEW_KEY_FILE, run where the log's current key file is (INVENTORY_SIGNING_KEY)`;
  if (key.made) {
    return new SigningKeyRefused(
      `there is no signing key file at ${key.keyFile} and this log has signing keys: a new key is used only once endorsed by a key of the log (${endorse}), or start with the key file this instance used`,
    );
  }
  const mine = listed.find((k) => k.keyId === key.keyId);
  if (!mine) {
    return new SigningKeyRefused(
      `the signing key ${key.keyFile} (key ${key.keyId}) is not endorsed by this log: endorse it with ${endorse.replace('NEW_KEY_FILE', key.keyFile)}`,
    );
  }
  if (mine.retiredAt !== null) {
    return new SigningKeyRefused(
      `the signing key ${key.keyFile} (key ${key.keyId}) was retired at ${mine.retiredAt}: start with a new key endorsed with ${endorse}`,
    );
  }
  if (key.signedState === false) {
    return new SigningKeyRefused(
      `the signing key ${key.keyFile} (key ${key.keyId}) is a key of this log, but ${key.keyFile}.signed, its record of the trees it signed, is not beside it (a key copied or restored without it could sign a fork): carry ${key.keyFile}.signed with the key, or start with a new key endorsed by this one (${endorse})`,
    );
  }
  return 'use';
}

/** Why an instance signing with keyId must stop (its key retired), or undefined. */
export function retiredProblem(listed: readonly Pick<SigningKeyInfo, 'keyId' | 'retiredAt'>[], keyId: string): string | undefined {
  const retiredAt = listed.find((k) => k.keyId === keyId)?.retiredAt;
  return retiredAt
    ? `the signing key ${keyId} was retired at ${retiredAt}: this instance signs nothing more; restart it with a key endorsed by scripts/keys endorse-signing`
    : undefined;
}
