// Recomputes the hash chain over the whole event log, in seq order. It finds the first
// event whose content or link does not match (an edit, a removal, a reordering), and,
// given a digest saved earlier, proves that today's log still extends it: rewriting
// history before that point, even with the chain recomputed, or cutting the log short
// of it, changes or loses the event the digest names.
import { eventHash, GENESIS_HASH, type Digest } from './store/hash-chain.ts';
import type { ChainRow, InventoryStore } from './store/port.ts';

export type Verdict = { ok: true; events: number; head: Digest } | { ok: false; events: number; seq: number; reason: string };

/** The rows of pages, one at a time. */
async function* each(pages: AsyncIterable<ChainRow[]>): AsyncIterable<ChainRow> {
  for await (const page of pages) yield* page;
}

export async function verifyLog(store: Pick<InventoryStore, 'chainRows'>, digest?: Digest): Promise<Verdict> {
  let head: Digest = { seq: 0, hash: GENESIS_HASH };
  let events = 0;
  if (digest && digest.seq === 0 && digest.hash !== GENESIS_HASH) {
    return { ok: false, events, seq: 0, reason: `seq 0 always has the hash ${GENESIS_HASH}` };
  }
  for await (const [seq, petId, version, type, data, actor, requestId, recordedAt, prevHash, hash] of each(store.chainRows())) {
    const at = Number(seq);
    events++;
    if (prevHash !== head.hash) {
      return {
        ok: false,
        events,
        seq: at,
        reason: `prev_hash does not link to the event before it (seq ${head.seq}): an event was removed, reordered or changed`,
      };
    }
    const expected = eventHash({ prevHash, seq, petId, version, type, data, actor, requestId, recordedAt });
    if (hash !== expected) {
      return { ok: false, events, seq: at, reason: 'the hash does not match the row: a field of this event was changed' };
    }
    if (digest && digest.seq > head.seq && digest.seq < at) {
      return { ok: false, events, seq: digest.seq, reason: `the digest's event is missing (seq ${head.seq} is followed by ${at})` };
    }
    if (digest && digest.seq === at && digest.hash !== hash) {
      return { ok: false, events, seq: at, reason: `the event has hash ${hash}, not the digest's: history up to it was rewritten` };
    }
    head = { seq: at, hash };
  }
  if (digest && digest.seq > head.seq) {
    return { ok: false, events, seq: digest.seq, reason: `the log ends at seq ${head.seq}, before the digest's: it was truncated` };
  }
  return { ok: true, events, head };
}
