// The key log (api_key_events) against its own chain and digests, and against the
// api_keys table it must account for exactly: a key deleted, recreated or back-dated no
// longer matches its events. Signing keys are added once, with their own id, and
// retired once.
import { chainWalk, type ChainBreak } from './chain-walk.ts';
import type { KeyHistory } from '../../store/audit-reads.ts';
import { keyEventHash, type Digest } from '../../store/hash-chain.ts';
import { keyIdOf, publicKeyFromRaw } from '../../support/signing.ts';

type KeyEventRow = KeyHistory['events'][number];

/** Why a SigningKeyAdded is not one (its id not its key's, or entered twice), or undefined. */
function signingKeyProblem(keyId: string, publicKey: string, seen: ReadonlySet<string>): string | undefined {
  if (seen.has(keyId)) return `a second SigningKeyAdded for signing key ${keyId}`;
  try {
    publicKeyFromRaw(publicKey);
  } catch {
    return `SigningKeyAdded ${keyId} holds no Ed25519 public key`;
  }
  if (keyIdOf(Buffer.from(publicKey, 'base64url')) !== keyId) return `SigningKeyAdded ${keyId} names another key's id`;
  return undefined;
}

/** The key events seen so far, by key name (API keys) or key id (signing keys). */
interface KeysSeen {
  created: Map<string, KeyEventRow>;
  revoked: Map<string, KeyEventRow>;
  signing: Set<string>;
  retired: Set<string>;
}

/** Why a key event cannot follow those seen (a key recreated, a revocation or retirement
 * of nothing), or undefined after noting it. */
function keyEventProblem(row: KeyEventRow, seen: KeysSeen): string | undefined {
  const [, type, name, keyHash] = row;
  if (type === 'SigningKeyAdded') {
    const wrong = signingKeyProblem(name, keyHash, seen.signing);
    if (!wrong) seen.signing.add(name);
    return wrong;
  }
  if (type === 'SigningKeyRetired') {
    if (!seen.signing.has(name)) return `SigningKeyRetired for signing key ${name}, which was not added before it`;
    if (seen.retired.has(name)) return `a second SigningKeyRetired for signing key ${name}`;
    seen.retired.add(name);
    return undefined;
  }
  const events = type === 'KeyCreated' ? seen.created : seen.revoked;
  if (events.has(name)) return `a second ${type} for key "${name}": the key was recreated`;
  if (type === 'KeyRevoked' && seen.created.get(name)?.[3] !== keyHash) {
    return `KeyRevoked for key "${name}", which was not created before it with this hash`;
  }
  events.set(name, row);
  return undefined;
}

/** Where the api_keys rows differ from the key events; `last` is the key log's newest seq. */
function apiKeysProblem(history: KeyHistory, seen: KeysSeen, last: number): ChainBreak | undefined {
  const rows = new Map(history.keys.map((k) => [k.name, k]));
  for (const [name, [seq, , , keyHash, recordedAt, actor]] of seen.created) {
    const key = rows.get(name);
    const at = Number(seq);
    if (!key) return { seq: at, reason: `key "${name}" is in the key log but not in api_keys: it was deleted` };
    if (key.hash !== keyHash || key.createdAt !== recordedAt || key.createdBy !== actor) {
      return { seq: at, reason: `api_keys row of key "${name}" differs from its KeyCreated event: it was changed or recreated` };
    }
    const revocation = seen.revoked.get(name);
    if (revocation && (key.revokedAt !== revocation[4] || key.revokedBy !== revocation[5])) {
      return {
        seq: Number(revocation[0]),
        reason: `api_keys row of key "${name}" differs from its KeyRevoked event: its revocation was changed`,
      };
    }
    if (!revocation && (key.revokedAt !== null || key.revokedBy !== null)) {
      return { seq: last, reason: `key "${name}" is revoked in api_keys but has no KeyRevoked event` };
    }
  }
  for (const key of history.keys) {
    if (!seen.created.has(key.name)) return { seq: last, reason: `key "${key.name}" of api_keys has no KeyCreated event` };
  }
  return undefined;
}

/** The key log against its chain, its digests, and the api_keys rows it must account for:
 * where it broke, or its head. */
export function verifyKeys(history: KeyHistory, wanted: Map<number, string>): ChainBreak | Digest {
  const walk = chainWalk('key event', wanted);
  const seen: KeysSeen = { created: new Map(), revoked: new Map(), signing: new Set(), retired: new Set() };
  for (const row of history.events) {
    const [seq, type, name, keyHash, recordedAt, actor, prevHash, hash, data] = row;
    const at = Number(seq);
    const broken = walk.step(at, prevHash, hash, keyEventHash({ prevHash, seq, type, name, keyHash, recordedAt, actor, data }));
    if (broken) return broken;
    const wrong = keyEventProblem(row, seen);
    if (wrong) return { seq: at, reason: wrong };
  }
  return walk.end(history.counters.keys) ?? apiKeysProblem(history, seen, walk.head.seq) ?? walk.head;
}

/** Where the key log's times go backwards (a key event appended with an earlier date,
 * as a back-dated KeyCreated would be, or instances' clocks apart); undefined when they do not. */
export function keyLogGoesBack(history: KeyHistory): string | undefined {
  let latest = '';
  for (const [seq, type, name, , recordedAt] of history.events) {
    if (recordedAt < latest) {
      return `the key log's recorded_at goes back in time at key seq ${seq} (${type} of "${name}" at ${recordedAt}, after ${latest}): a back-dated key event, or clocks apart`;
    }
    latest = recordedAt;
  }
  return undefined;
}
