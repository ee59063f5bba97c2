// Checkpoints of the log (C2SP tlog-checkpoint) signed as C2SP signed notes, and the
// endorsements of new keys in the same envelope: the formats any note verifier reads
// (Go's golang.org/x/mod/sumdb/note among them). Everything here is part of the public
// contract, byte for byte: standard base64 with padding, an em dash before each
// signature, every line ending in a newline.
import { createHash, createPublicKey, verify, type KeyObject } from 'node:crypto';

/** The Ed25519 signature type of a signed note's key hash. */
const ED25519 = 0x01;
export const ORIGIN_PREFIX = 'petstore-inventory/';
const ENDORSEMENT_DOMAIN = 'petstore-inventory/key-endorsement/v1';

/** A log's origin line: the name of its checkpoints and of its keys. */
export function originOf(logId: string): string {
  return `${ORIGIN_PREFIX}${logId}`;
}

/** The note key hash: the first 4 bytes of SHA-256(name || "\n" || 0x01 || public key). */
function noteKeyHash(name: string, rawPublicKey: Buffer): Buffer {
  return createHash('sha256')
    .update(`${name}\n`, 'utf8')
    .update(Buffer.from([ED25519]))
    .update(rawPublicKey)
    .digest()
    .subarray(0, 4);
}

/** The verifier key: `<name>+<key hash, 8 hex>+<base64(0x01 || public key)>`. */
export function verifierKey(name: string, rawPublicKey: Buffer): string {
  return `${name}+${noteKeyHash(name, rawPublicKey).toString('hex')}+${Buffer.concat([Buffer.from([ED25519]), rawPublicKey]).toString('base64')}`;
}

export interface Verifier {
  name: string;
  keyHash: Buffer;
  rawPublicKey: Buffer;
  key: KeyObject;
  /** The verifier key as given. */
  text: string;
}

/** A verifier key's parts, or an Error saying what is wrong with it. */
export function parseVerifierKey(text: string): Verifier | Error {
  const m = /^([^\s+]+)\+([0-9a-f]{8})\+([A-Za-z0-9+/]+={0,2})$/.exec(text);
  if (!m) return new Error('a verifier key is NAME+HASH+KEY (8 hex digits, then base64)');
  const [, name, hashHex, b64] = m as unknown as [string, string, string, string];
  const bytes = Buffer.from(b64, 'base64');
  if (bytes.length !== 33 || bytes[0] !== ED25519 || bytes.toString('base64') !== b64)
    return new Error('the verifier key is not an Ed25519 key (0x01 then 32 bytes)');
  const rawPublicKey = bytes.subarray(1);
  if (!noteKeyHash(name, rawPublicKey).equals(Buffer.from(hashHex, 'hex')))
    return new Error("the verifier key's hash does not match its name and key");
  const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: rawPublicKey.toString('base64url') }, format: 'jwk' });
  return { name, keyHash: Buffer.from(hashHex, 'hex'), rawPublicKey, key, text };
}

/** A signed note: text (each line ending in a newline), an empty line, one line per signature. */
export function signedNote(text: string, name: string, rawPublicKey: Buffer, signature: Buffer): string {
  if (!text.endsWith('\n')) throw new Error("a note's text ends with a newline");
  return `${text}\n\u2014 ${name} ${Buffer.concat([noteKeyHash(name, rawPublicKey), signature]).toString('base64')}\n`;
}

interface NoteSignature {
  name: string;
  keyHash: Buffer;
  signature: Buffer;
}

export interface Note {
  /** The signed text, its last newline included. */
  text: string;
  signatures: NoteSignature[];
}

/** A note's text and signature lines, or an Error saying why it is no signed note. */
export function parseNote(note: string): Note | Error {
  const split = note.lastIndexOf('\n\n');
  if (split < 0 || !note.endsWith('\n'))
    return new Error('a signed note is text, an empty line, then signature lines, each ending in a newline');
  const text = note.slice(0, split + 1);
  const lines = note.slice(split + 2, -1).split('\n');
  const signatures: NoteSignature[] = [];
  for (const line of lines) {
    const m = /^\u2014 (\S+) ([A-Za-z0-9+/]+={0,2})$/.exec(line);
    if (!m) return new Error(`not a signature line: ${JSON.stringify(line.slice(0, 80))}`);
    const bytes = Buffer.from(m[2]!, 'base64');
    if (bytes.length < 5) return new Error('a signature line holds a key hash and a signature');
    signatures.push({ name: m[1]!, keyHash: bytes.subarray(0, 4), signature: bytes.subarray(4) });
  }
  if (signatures.length === 0) return new Error('the note has no signature');
  return { text, signatures };
}

/** The verifiers among `trusted` that signed the note (each signature checked). */
export function noteSigners(note: Note, trusted: readonly Verifier[]): Verifier[] {
  const signers: Verifier[] = [];
  for (const sig of note.signatures) {
    for (const v of trusted) {
      if (v.name !== sig.name || !v.keyHash.equals(sig.keyHash)) continue;
      if (verify(null, Buffer.from(note.text, 'utf8'), v.key, sig.signature)) signers.push(v);
    }
  }
  return signers;
}

export interface Checkpoint {
  origin: string;
  size: number;
  /** The tree's root, 32 bytes. */
  root: Buffer;
  keys: { seq: number; hash: string };
  time: string;
}

/** A checkpoint's signed text: origin, size, root, then the log's own two lines. */
export function checkpointText(c: Checkpoint): string {
  return `${c.origin}\n${c.size}\n${c.root.toString('base64')}\nkeys ${c.keys.seq} ${c.keys.hash}\ntime ${c.time}\n`;
}

/** A checkpoint's fields from its signed text, or an Error saying what it expected. */
export function parseCheckpoint(text: string): Checkpoint | Error {
  const m =
    /^(petstore-inventory\/[0-9a-f-]{36})\n(0|[1-9]\d{0,15})\n([A-Za-z0-9+/]{43}=)\nkeys (0|[1-9]\d{0,15}) ([0-9a-f]{64})\ntime (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)\n$/.exec(
      text,
    );
  if (!m)
    return new Error(
      'a checkpoint is five lines: petstore-inventory/<logId>, the size, the root (base64), keys <seq> <hash>, time <ISO 8601>',
    );
  return { origin: m[1]!, size: Number(m[2]), root: Buffer.from(m[3]!, 'base64'), keys: { seq: Number(m[4]), hash: m[5]! }, time: m[6]! };
}

/** An endorsement's signed text: the current key vouches for the new one in this log. */
export function endorsementText(logId: string, newVerifierKey: string, time: string): string {
  return `${ENDORSEMENT_DOMAIN}\n${logId}\n${newVerifierKey}\ntime ${time}\n`;
}

interface Endorsement {
  logId: string;
  verifierKey: string;
  time: string;
}

export function parseEndorsement(text: string): Endorsement | Error {
  const m = /^petstore-inventory\/key-endorsement\/v1\n([0-9a-f-]{36})\n(\S+)\ntime (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)\n$/.exec(text);
  if (!m)
    return new Error('an endorsement is four lines: petstore-inventory/key-endorsement/v1, the logId, the verifier key, time <ISO 8601>');
  return { logId: m[1]!, verifierKey: m[2]!, time: m[3]! };
}

/**
 * The Log-Receipt header of version 2 (an RFC 8941 dictionary): the event, the signed
 * checkpoint of a tree that holds it (the whole note, base64), and its inclusion path
 * in that tree, bottom up.
 */
export function receiptHeaderOfNote(
  logId: string,
  seq: bigint | number,
  hash: string,
  noteBase64: string,
  proof: readonly Buffer[],
): string {
  const path = proof.map((h) => `:${h.toString('base64')}:`).join(' ');
  return `v=2, log="${logId}", seq=${seq}, hash="${hash}", checkpoint=:${noteBase64}:, proof=(${path})`;
}

export interface ReceiptV2 {
  log: string;
  seq: number;
  hash: string;
  /** The signed note, as signed. */
  checkpoint: string;
  proof: Buffer[];
}

/** A version-2 Log-Receipt's members, or undefined when the header is not one. */
export function parseReceiptV2(header: string): ReceiptV2 | undefined {
  const m =
    /^v=2, log="([0-9a-f-]{36})", seq=([1-9]\d{0,15}), hash="([0-9a-f]{64})", checkpoint=:([A-Za-z0-9+/]+={0,2}):, proof=\(((?::[A-Za-z0-9+/]{43}=:(?: (?=:))?)*)\)$/.exec(
      header,
    );
  if (!m) return undefined;
  const proof = m[5] === '' ? [] : m[5]!.split(' ').map((h) => Buffer.from(h.slice(1, -1), 'base64'));
  return { log: m[1]!, seq: Number(m[2]), hash: m[3]!, checkpoint: Buffer.from(m[4]!, 'base64').toString('utf8'), proof };
}
