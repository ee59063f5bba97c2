// The tamper-evident chain over the event log. Each event's hash is SHA-256 over a
// domain-separated, canonical encoding of the previous event's hash and every field of
// the row, so changing, removing or reordering any event breaks the chain from there on,
// and a digest SEQ:HASH saved earlier pins the whole history up to SEQ.
//
// Encoding (docs/auditors.md shows how to check it with other tools):
//   SHA-256( "petstore-inventory/event/v1" 0x00
//            || for each of prev_hash, seq, pet_id, version, type, data, actor,
//               request_id, recorded_at: uint32 big-endian byte length || UTF-8 bytes )
// with integers as decimal digits and prev_hash as 64 lowercase hex digits (64 zeros
// before the first event). Key history (api_key_events) has a chain of its own, encoded
// alike under the domain "petstore-inventory/key/v1" over prev_hash, seq, type, name,
// key_hash, recorded_at, actor, and data when it is not empty (a read-only key's
// KeyCreated: its scope). Events without data hash as they did before data existed.
import { createHash } from 'node:crypto';

export const GENESIS_HASH = '0'.repeat(64);
const DOMAIN = Buffer.from('petstore-inventory/event/v1\0', 'utf8');

interface ChainedFields {
  prevHash: string;
  seq: bigint | number;
  petId: bigint | number;
  version: bigint | number;
  type: string;
  data: string;
  actor: string;
  requestId: string;
  recordedAt: string;
}

export function eventHash(f: ChainedFields): string {
  return chainHash(DOMAIN, [
    f.prevHash,
    String(f.seq),
    String(f.petId),
    String(f.version),
    f.type,
    f.data,
    f.actor,
    f.requestId,
    f.recordedAt,
  ]);
}

/** The key log's own chain (api_key_events): the same encoding under its own domain. */
const KEY_DOMAIN = Buffer.from('petstore-inventory/key/v1\0', 'utf8');

export type KeyEventType = 'KeyCreated' | 'KeyRevoked' | 'SigningKeyAdded' | 'SigningKeyRetired';

interface KeyChainedFields {
  prevHash: string;
  seq: bigint | number;
  type: string;
  name: string;
  keyHash: string;
  recordedAt: string;
  actor: string;
  /** '' (or absent) for none. */
  data?: string;
}

export function keyEventHash(f: KeyChainedFields): string {
  const fields = [f.prevHash, String(f.seq), f.type, f.name, f.keyHash, f.recordedAt, f.actor];
  return chainHash(KEY_DOMAIN, f.data ? [...fields, f.data] : fields);
}

function chainHash(domain: Buffer, fields: string[]): string {
  const hash = createHash('sha256').update(domain);
  for (const field of fields) {
    const bytes = Buffer.from(field, 'utf8');
    const length = Buffer.allocUnsafe(4);
    length.writeUInt32BE(bytes.length);
    hash.update(length).update(bytes);
  }
  return hash.digest('hex');
}

/** A chain's head: SEQ:HASH for the event log, keys:SEQ:HASH for the key log. */
export interface Digest {
  seq: number;
  hash: string;
  chain?: 'keys';
}

export function formatDigest(d: Digest): string {
  return `${d.chain === 'keys' ? 'keys:' : ''}${d.seq}:${d.hash}`;
}

export function parseDigest(text: string): Digest | undefined {
  const m = /^(keys:)?(0|[1-9][0-9]{0,15}):([0-9a-f]{64})$/.exec(text.trim());
  if (!m) return undefined;
  return m[1] ? { seq: Number(m[2]), hash: m[3]!, chain: 'keys' } : { seq: Number(m[2]), hash: m[3]! };
}
