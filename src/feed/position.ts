// Positions in the feed: a cursor and the page after it. A cursor is a seq (canonical
// decimal digits, 0 to int64 max, kept as BigInt so that no digit is lost) or the digest
// SEQ:HASH, which also says which log the reader followed: a restored or another log is
// told apart. Reading one from a request is the edge's job.
import type { AuditReads } from '../store/audit-reads.ts';
import type { ChainRow, EventLog } from '../store/event-log.ts';
import { GENESIS_HASH } from '../store/hash-chain.ts';
import { digestOf } from './event-json.ts';
import { CursorRefused } from './errors.ts';

const INT64_MAX = 9223372036854775807n;

export interface Cursor {
  seq: bigint;
  /** The hash of the event at seq, when the cursor is a digest. */
  hash?: string;
}

/** A cursor as written (a seq, or SEQ:HASH), or undefined when it is not one. */
export function parseCursor(text: string): Cursor | undefined {
  const m = /^(0|[1-9][0-9]{0,18})(?::([0-9a-f]{64}))?$/.exec(text);
  if (!m || BigInt(m[1]!) > INT64_MAX) return undefined;
  return m[2] === undefined ? { seq: BigInt(m[1]!) } : { seq: BigInt(m[1]!), hash: m[2] };
}

export type CursorStore = Pick<EventLog, 'eventsAfter'> & Pick<AuditReads, 'logHead'>;

async function refused(store: CursorStore, reason: CursorRefused['reason'], cursor: string): Promise<never> {
  const head = await store.logHead();
  const where = `the log's head is seq ${head.seq}, hash ${head.hash} (digest ${head.seq}:${head.hash})`;
  throw new CursorRefused(
    reason,
    reason === 'past_head'
      ? `the cursor ${cursor} is past the newest event: ${where}; events after it would never be sent`
      : `the cursor ${cursor} is not in this log (the event at its seq has another hash: a restored or another log): ${where}`,
  );
}

/**
 * Checks that the cursor names an event of this log (CursorRefused otherwise), and reads the page
 * after it: at most `limit` events (none when limit is 0). One query serves both: it
 * starts at the cursor's own event.
 */
export async function pageAfter(store: CursorStore, cursor: Cursor, limit: number): Promise<{ rows: ChainRow[]; digest: string }> {
  const shown = cursor.hash === undefined ? String(cursor.seq) : `${cursor.seq}:${cursor.hash}`;
  if (cursor.seq === 0n) {
    if (cursor.hash !== undefined && cursor.hash !== GENESIS_HASH) return refused(store, 'not_in_log', shown);
    return { rows: limit > 0 ? await store.eventsAfter(0n, limit) : [], digest: `0:${GENESIS_HASH}` };
  }
  const rows = await store.eventsAfter(cursor.seq - 1n, limit + 1);
  const own = rows[0];
  if (own === undefined) return refused(store, 'past_head', shown);
  if (own[0] !== cursor.seq || (cursor.hash !== undefined && own[9] !== cursor.hash)) return refused(store, 'not_in_log', shown);
  return { rows: rows.slice(1), digest: digestOf(own) };
}
