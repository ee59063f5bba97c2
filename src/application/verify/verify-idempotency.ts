// The idempotency records are not part of the hash chain (they expire and are removed;
// a chain must only grow), but each stored 200 was written in the same transaction as
// its event: the record names the entry's version in its ETag and the quantity in its
// body, so that event must be in the log. verify-log checks it, which catches a record
// without its event (an event removed behind the triggers, or a record forged to make a
// client believe a write happened). A stored 200's receipt, which its replays send again,
// must be a receipt of that very event: this log's id, the event's seq and hash, a key
// the key log lists, and that key's signature (version 1: over the receipt; version 2:
// over its checkpoint, whose tree the receipt's inclusion path must lead to).
import { decodeEvent } from '../../domain/codec.ts';
import type { AuditReads } from '../../store/audit-reads.ts';
import type { IdempotencyStore } from '../../store/idempotency.ts';
import type { EventLog } from '../../store/event-log.ts';
import { parseReceipt, publicKeyFromRaw, receiptMessage, verifySignature } from '../../support/signing.ts';
import {
  noteSigners,
  originOf,
  parseCheckpoint,
  parseNote,
  parseReceiptV2,
  parseVerifierKey,
  verifierKey,
  type Verifier,
} from '../../support/checkpoint.ts';
import { eventLeaf } from '../../support/merkle.ts';
import { rootFromInclusion } from '../../support/merkle-verify.ts';

/** What a stored receipt says it is a receipt of. */
interface Receipt {
  log: string;
  seq: number;
  hash: string;
}

interface LogKeys {
  logId: string;
  /** By key id: version 1 receipts name their key. */
  byId: ReadonlyMap<string, ReturnType<typeof publicKeyFromRaw>>;
  /** The same keys as note verifiers: version 2 receipts carry a signed checkpoint. */
  verifiers: readonly Verifier[];
}

export type RecordsVerdict = { ok: true; records: number } | { ok: false; records: number; reason: string };

const ITEM_PATH = /^\/v1\/inventory\/([1-9][0-9]*)$/;

/** The log's id and its signing keys, as the receipts are checked against them. */
async function logKeysOf(store: Pick<AuditReads, 'logHead' | 'signingKeys'>): Promise<LogKeys> {
  const { logId } = await store.logHead();
  const listed = await store.signingKeys();
  return {
    logId,
    byId: new Map(listed.map((k) => [k.keyId, publicKeyFromRaw(k.publicKey)])),
    verifiers: listed.map((k) => parseVerifierKey(verifierKey(originOf(logId), Buffer.from(k.publicKey, 'base64url'))) as Verifier),
  };
}

/** Why a stored 200 does not match the event of its entry's version (another quantity,
 * or a receipt for another event); undefined when it does. */
function storedAnswerProblem(
  want: { quantity: unknown; path: string; receipt?: Receipt },
  event: { seq: bigint; version: bigint; type: string; data: string; hash: string | null },
): string | undefined {
  const { seq, version, hash } = event;
  const decoded = decodeEvent(event.type, event.data);
  if (decoded.type !== 'QuantitySet' || decoded.data.quantity !== want.quantity) {
    return `the stored 200 for ${want.path} at version ${version} does not match that event`;
  }
  if (want.receipt && (BigInt(want.receipt.seq) !== seq || want.receipt.hash !== hash)) {
    return (
      `the stored 200 for ${want.path} at version ${version} has a receipt for seq ${want.receipt.seq} (hash ${want.receipt.hash}), ` +
      `not for its event (seq ${seq}, hash ${hash})`
    );
  }
  return undefined;
}

export async function verifyIdempotency(
  store: Pick<EventLog, 'chainRows'> & Pick<AuditReads, 'logHead' | 'signingKeys'> & { idempotency: Pick<IdempotencyStore, 'unexpired'> },
): Promise<RecordsVerdict> {
  const keys = await logKeysOf(store);
  // By "petId:version": the quantity each stored 200 says was set, and its receipt.
  const expected = new Map<string, { quantity: unknown; path: string; receipt?: Receipt }>();
  let records = 0;
  // Every record, expired ones not yet removed included (nothing expires before '').
  for await (const page of store.idempotency.unexpired('')) {
    for (const record of page) {
      records++;
      if (record.status !== 200) continue;
      const pet = ITEM_PATH.exec(record.path)?.[1];
      const version = /^"([1-9][0-9]*)"$/.exec(record.etag ?? '')?.[1];
      if (!pet || !version) return { ok: false, records, reason: `a stored 200 for ${record.path} does not name an entry's version` };
      const receipt = record.receipt ? (parseReceiptV2(record.receipt) ?? parseReceipt(record.receipt)) : undefined;
      if (record.receipt) {
        const wrong = receiptProblem(record.receipt, keys);
        if (wrong)
          return { ok: false, records, reason: `the stored 200 for ${record.path} at version ${version} has a receipt that ${wrong}` };
      }
      expected.set(`${pet}:${version}`, {
        quantity: (JSON.parse(record.body) as { quantity?: unknown }).quantity,
        path: record.path,
        ...(receipt ? { receipt } : {}),
      });
    }
  }
  if (expected.size > 0) {
    for await (const page of store.chainRows()) {
      for (const [seq, petId, version, type, data, , , , , hash] of page) {
        const id = `${petId}:${version}`;
        const want = expected.get(id);
        if (!want) continue;
        const wrong = storedAnswerProblem(want, { seq, version, type, data, hash });
        if (wrong) return { ok: false, records, reason: wrong };
        expected.delete(id);
      }
    }
  }
  const [missing] = expected;
  if (missing) {
    const [id, { path }] = missing;
    return { ok: false, records, reason: `a stored 200 for ${path} names version ${id.split(':')[1]}, which the log does not have` };
  }
  return { ok: true, records };
}

/** Why a stored receipt is not one this log's signing keys made; undefined when it is. */
function receiptProblem(header: string, keys: LogKeys): string | undefined {
  const v2 = parseReceiptV2(header);
  if (v2) return receiptV2Problem(v2, keys);
  const receipt = parseReceipt(header);
  if (!receipt) return 'is not a Log-Receipt';
  if (receipt.log !== keys.logId) return `names log ${receipt.log}, not this log (${keys.logId})`;
  const key = keys.byId.get(receipt.key);
  if (!key) return `names signing key ${receipt.key}, which the key log does not list`;
  if (!verifySignature(key, receiptMessage(keys.logId, receipt.seq, receipt.hash), receipt.sig)) {
    return `does not verify with key ${receipt.key}`;
  }
  return undefined;
}

function receiptV2Problem(receipt: NonNullable<ReturnType<typeof parseReceiptV2>>, keys: LogKeys): string | undefined {
  if (receipt.log !== keys.logId) return `names log ${receipt.log}, not this log (${keys.logId})`;
  const note = parseNote(receipt.checkpoint);
  const checkpoint = note instanceof Error ? note : parseCheckpoint(note.text);
  if (note instanceof Error || checkpoint instanceof Error) return `carries no checkpoint (${(checkpoint as Error).message})`;
  if (checkpoint.origin !== originOf(keys.logId)) return `carries a checkpoint of ${checkpoint.origin}, not of this log`;
  if (noteSigners(note, keys.verifiers).length === 0) return 'carries a checkpoint no signing key of the key log signed';
  const root = rootFromInclusion(receipt.seq - 1, checkpoint.size, eventLeaf(receipt.hash), receipt.proof);
  if (!root?.equals(checkpoint.root))
    return `has an inclusion path that does not lead to its checkpoint's root (tree of ${checkpoint.size})`;
  return undefined;
}
