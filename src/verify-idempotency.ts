// The idempotency records are not part of the hash chain (they expire and are removed;
// a chain must only grow), but each stored 200 was written in the same transaction as
// its event: the record names the entry's version in its ETag and the quantity in its
// body, so that event must be in the log. verify-log checks it, which catches a record
// without its event (an event removed behind the triggers, or a record forged to make a
// client believe a write happened).
import { decodeEvent } from './domain/codec.ts';
import type { IdempotencyStore } from './store/idempotency.ts';
import type { EventLog } from './store/event-log.ts';

export type RecordsVerdict = { ok: true; records: number } | { ok: false; records: number; reason: string };

const ITEM_PATH = /^\/v1\/inventory\/([1-9][0-9]*)$/;

export async function verifyIdempotency(
  store: Pick<EventLog, 'chainRows'> & { idempotency: Pick<IdempotencyStore, 'unexpired'> },
): Promise<RecordsVerdict> {
  // By "petId:version": the quantity each stored 200 says was set.
  const expected = new Map<string, { quantity: unknown; path: string }>();
  let records = 0;
  // Every record, expired ones not yet removed included (nothing expires before '').
  for await (const page of store.idempotency.unexpired('')) {
    for (const record of page) {
      records++;
      if (record.status !== 200) continue;
      const pet = ITEM_PATH.exec(record.path)?.[1];
      const version = /^"([1-9][0-9]*)"$/.exec(record.etag ?? '')?.[1];
      if (!pet || !version) return { ok: false, records, reason: `a stored 200 for ${record.path} does not name an entry's version` };
      expected.set(`${pet}:${version}`, { quantity: (JSON.parse(record.body) as { quantity?: unknown }).quantity, path: record.path });
    }
  }
  if (expected.size > 0) {
    for await (const page of store.chainRows()) {
      for (const [, petId, version, type, data] of page) {
        const id = `${petId}:${version}`;
        const want = expected.get(id);
        if (!want) continue;
        const event = decodeEvent(type, data);
        if (event.type !== 'QuantitySet' || event.data.quantity !== want.quantity) {
          return { ok: false, records, reason: `the stored 200 for ${want.path} at version ${version} does not match that event` };
        }
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
