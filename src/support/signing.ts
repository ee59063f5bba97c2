// The log's signatures: an Ed25519 key per instance, whose public key the key log
// records (SigningKeyAdded), signing the heads GET /v1/log/head answers and a receipt for
// every acknowledged write. Anyone holding the public key can check them with any Ed25519
// library from the messages below, without the database: the messages and the header
// are part of the contract, so they are built here and nowhere else.
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify, type KeyObject } from 'node:crypto';
import { existsSync, linkSync, mkdirSync, readFileSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

const HEAD_DOMAIN = 'petstore-inventory/head/v1';
const RECEIPT_DOMAIN = 'petstore-inventory/receipt/v1';
/** Who a SigningKeyAdded names: the service that started signing with the key. */
export const SIGNING_ACTOR = 'service';

/** The key as the worker thread receives it: plain data. */
export interface SigningKeyData {
  /** PKCS#8 PEM. */
  pem: string;
  /** Where it was read from, for the messages that name it. */
  file?: string;
  /** The file did not exist and was made for this start: it may only become a log's first key. */
  made?: boolean;
  /** Whether `<file>.signed` (what the key signed) was beside the file when a service
   * started with it; undefined where nothing looked (tools, a store opened in a test). */
  signedState?: boolean;
}

export interface Signer {
  keyId: string;
  /** The raw 32-byte public key, base64url. */
  publicKey: string;
  /** The Ed25519 signature of the UTF-8 message. */
  sign(message: string): Buffer;
}

/** The raw 32 bytes of an Ed25519 public key (the end of its SPKI DER). */
function rawPublicKey(key: KeyObject): Buffer {
  const der = key.export({ type: 'spki', format: 'der' });
  return der.subarray(der.length - 32);
}

/** The first 16 hex digits of SHA-256 over the raw public key. */
export function keyIdOf(rawPublicKey: Buffer): string {
  return createHash('sha256').update(rawPublicKey).digest('hex').slice(0, 16);
}

/** A public key from its raw 32 bytes, base64url; throws on anything else. */
export function publicKeyFromRaw(base64url: string): KeyObject {
  const raw = Buffer.from(base64url, 'base64url');
  if (raw.length !== 32 || raw.toString('base64url') !== base64url) throw new Error('an Ed25519 public key is 32 bytes, base64url');
  return createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: base64url }, format: 'jwk' });
}

export function makeSigner({ pem }: SigningKeyData): Signer {
  const privateKey = createPrivateKey(pem);
  if (privateKey.asymmetricKeyType !== 'ed25519') throw new Error(`the signing key is ${privateKey.asymmetricKeyType}, not Ed25519`);
  const raw = rawPublicKey(createPublicKey(privateKey));
  return {
    keyId: keyIdOf(raw),
    publicKey: raw.toString('base64url'),
    sign: (message) => sign(null, Buffer.from(message, 'utf8'), privateKey),
  };
}

/**
 * The instance's key from its file, made (0600, its directory 0700) when the file is
 * missing. Never overwrites a file: a key once used must stay the one its signatures name.
 * A file others may read is used, and warn names it; a file that is no usable key, or one
 * that cannot be made, throws an error that says what the file must be and how to make it.
 */
export function loadSigningKey(path: string, warn: (message: string) => void = () => {}): SigningKeyData {
  const made = !existsSync(path);
  if (made) makeSigningKeyFile(path);
  const data = { ...readSigningKeyFile(path), made };
  if ((statSync(path).mode & 0o077) !== 0) {
    warn(
      `the signing key ${path} may be read or changed by other users (whoever holds it can sign in the service's name): chmod 600 ${shellWord(path)}`,
    );
  }
  return data;
}

/** The key in an existing file (never made); throws saying what the file must be. */
export function readSigningKeyFile(path: string): SigningKeyData {
  let pem: string;
  try {
    pem = readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new Error(`there is no file ${path}: ${keyFileWanted(path)}`, { cause: error });
    throw new Error(`cannot read it (${code ?? (error as Error).message})`, { cause: error });
  }
  const data = { pem, file: path };
  const unusable = unusableKeyReason(data);
  if (unusable) throw new Error(`${unusable}: ${keyFileWanted(path)}`);
  return data;
}

/** What a signing key file must be, and how to make one, for an error about path. */
function keyFileWanted(path: string): string {
  return (
    'the file must hold an unencrypted PKCS#8 PEM Ed25519 private key (-----BEGIN PRIVATE KEY-----); ' +
    `make one with: openssl genpkey -algorithm ed25519 -out ${shellWord(path)} && chmod 600 ${shellWord(path)}`
  );
}

/** Why the file's text is no key this service can sign with, or undefined. */
function unusableKeyReason(data: SigningKeyData): string | undefined {
  if (data.pem.trim() === '') return 'it is empty';
  if (data.pem.includes('-----BEGIN ENCRYPTED PRIVATE KEY-----')) return 'it is encrypted, and the service cannot ask for a passphrase';
  let key: KeyObject;
  try {
    key = createPrivateKey(data.pem);
  } catch {
    return 'it is not a PEM private key';
  }
  if (key.asymmetricKeyType !== 'ed25519') return `it is an ${key.asymmetricKeyType ?? 'unknown'} key, not Ed25519`;
  return undefined;
}

/** A path as one shell word. */
function shellWord(path: string): string {
  return /^[\w./@%+=:,-]+$/.test(path) ? path : `'${path.replaceAll("'", "'\\''")}'`;
}

/** A new key at path; a folder it cannot be written in is named as such. */
function makeSigningKeyFile(path: string): void {
  const folder = dirname(path);
  const cannot = (error: unknown) => {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EROFS' || code === 'EACCES' || code === 'EPERM') {
      return new Error(
        `there is no key file and one cannot be made there: the folder ${folder} is read-only or not writable by this user (${code}); ` +
          'make the key where the service may write it (INVENTORY_SIGNING_KEY), or make it with: ' +
          `openssl genpkey -algorithm ed25519 -out ${shellWord(path)} && chmod 600 ${shellWord(path)}`,
        { cause: error },
      );
    }
    return new Error(`there is no key file and one cannot be made there (${code ?? (error as Error).message})`, { cause: error });
  };
  try {
    mkdirSync(folder, { recursive: true, mode: 0o700 });
  } catch (error) {
    throw cannot(error);
  }
  const { privateKey } = generateKeyPairSync('ed25519');
  const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
  // Written whole beside it, then linked into place: a process starting at the same
  // moment finds either no file or a complete one, and the first link wins.
  const whole = `${path}.${process.pid}.tmp`;
  try {
    writeFileSync(whole, pem, { mode: 0o600, flag: 'wx' });
  } catch (error) {
    throw cannot(error);
  }
  try {
    linkSync(whole, path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw cannot(error);
  } finally {
    unlinkSync(whole);
  }
}

export interface HeadFields {
  logId: string;
  seq: number;
  hash: string;
  keys: { seq: number; hash: string };
  time: string;
}

/** What a head's signature covers, each field exactly as the answer shows it. */
export function headMessage(h: HeadFields): string {
  return [HEAD_DOMAIN, h.logId, String(h.seq), h.hash, String(h.keys.seq), h.keys.hash, h.time].join('\n');
}

export function receiptMessage(logId: string, seq: bigint | number, hash: string): string {
  return [RECEIPT_DOMAIN, logId, String(seq), hash].join('\n');
}

/** The Log-Receipt header (an RFC 8941 dictionary) of the event at seq with hash. */
export function receiptHeader(signer: Signer, logId: string, seq: bigint | number, hash: string): string {
  return receiptHeaderOf(logId, seq, hash, signer.keyId, signer.sign(receiptMessage(logId, seq, hash)).toString('base64'));
}

/** The Log-Receipt header from its members, the signature (base64) made already. */
export function receiptHeaderOf(logId: string, seq: bigint | number, hash: string, keyId: string, signature: string): string {
  return `log="${logId}", seq=${seq}, hash="${hash}", key="${keyId}", sig=:${signature}:`;
}

export interface Receipt {
  log: string;
  seq: number;
  hash: string;
  key: string;
  sig: Buffer;
}

/** A Log-Receipt header's members, or undefined when it is not one. */
export function parseReceipt(header: string): Receipt | undefined {
  const m = /^log="([0-9a-f-]{36})", seq=(\d{1,15}), hash="([0-9a-f]{64})", key="([0-9a-f]{16})", sig=:([A-Za-z0-9+/]+={0,2}):$/.exec(
    header,
  );
  if (!m) return undefined;
  return { log: m[1]!, seq: Number(m[2]), hash: m[3]!, key: m[4]!, sig: Buffer.from(m[5]!, 'base64') };
}

/** Whether signature is publicKey's over message. */
export function verifySignature(publicKey: KeyObject, message: string, signature: Buffer): boolean {
  return verify(null, Buffer.from(message, 'utf8'), publicKey, signature);
}
