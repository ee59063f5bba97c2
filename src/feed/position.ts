// The feed's query: where to start (after, or Last-Event-ID for a stream that
// reconnects) and how much a page holds. A cursor is a seq (canonical decimal digits, 0
// to int64 max, kept as BigInt so that no digit is lost) or the digest SEQ:HASH, which
// also says which log the reader followed: a restored or another log is told apart.
import type { AuditReads } from '../store/audit-reads.ts';
import type { ChainRow, EventLog } from '../store/event-log.ts';
import { GENESIS_HASH } from '../store/hash-chain.ts';
import { digestOf } from './event-json.ts';
import { CursorRefused, FeedQueryInvalid } from './errors.ts';

const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 1000;
const INT64_MAX = 9223372036854775807n;
const PARAMETERS = new Set(['after', 'limit']);

interface Cursor {
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

function cursorOf(text: string, name: string): Cursor {
  const cursor = parseCursor(text);
  if (!cursor) {
    throw new FeedQueryInvalid(
      `${name} must be a seq (decimal digits without leading zeros, 0 to ${INT64_MAX}) or a digest SEQ:HASH, not ${JSON.stringify(text)}`,
    );
  }
  return cursor;
}

interface FeedQuery {
  after: Cursor;
  limit: number;
}

/** query: the parsed query string (Koa's ctx.query); lastEventId: the header of a
 * stream, if sent and not empty (an empty one is absent, as EventSource means it). */
export function readFeedQuery(query: Record<string, string | string[] | undefined>, lastEventId: string | undefined): FeedQuery {
  for (const [name, value] of Object.entries(query)) {
    if (!PARAMETERS.has(name)) throw new FeedQueryInvalid(`unknown query parameter ${JSON.stringify(name)}: only after and limit`);
    if (Array.isArray(value)) throw new FeedQueryInvalid(`${name} is given more than once`);
  }
  const after = query.after as string | undefined;
  const limit = query.limit as string | undefined;
  let pageLimit = DEFAULT_LIMIT;
  if (limit !== undefined) {
    if (!/^[1-9][0-9]{0,3}$/.test(limit) || Number(limit) > MAX_LIMIT) {
      throw new FeedQueryInvalid(`limit must be an integer from 1 to ${MAX_LIMIT}, not ${JSON.stringify(limit)}`);
    }
    pageLimit = Number(limit);
  }
  // A reconnecting stream's Last-Event-ID is where it really is; after is where it began.
  const start =
    lastEventId !== undefined && lastEventId.trim() !== ''
      ? cursorOf(lastEventId.trim(), 'Last-Event-ID')
      : after !== undefined
        ? cursorOf(after, 'after')
        : { seq: 0n };
  return { after: start, limit: pageLimit };
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

/** The media ranges of an Accept header, parameters other than q left out of the match. */
function ranges(accept: string): { type: string; q: number }[] {
  return accept.split(',').map((part) => {
    const [type = '', ...params] = part.split(';');
    let q = 1;
    for (const param of params) {
      const [name = '', value = ''] = param.split('=');
      if (name.trim().toLowerCase() === 'q') q = /^\s*(0(\.\d{0,3})?|1(\.0{0,3})?)\s*$/.test(value) ? Number(value) : 0;
    }
    return { type: type.trim().toLowerCase(), q };
  });
}

/** The q an Accept header gives a media type: that of its most specific matching range. */
function qualityOf(given: { type: string; q: number }[], type: string): number {
  const major = `${type.slice(0, type.indexOf('/'))}/*`;
  let best: { rank: number; q: number } = { rank: -1, q: 0 };
  for (const r of given) {
    const rank = r.type === type ? 2 : r.type === major ? 1 : r.type === '*/*' ? 0 : -1;
    if (rank > best.rank) best = { rank, q: r.q };
  }
  return best.q;
}

/**
 * Whether a request asks for the stream: its Accept header gives text/event-stream a
 * higher q than application/json (media-type parameters such as charset do not matter;
 * text/* is the stream, *\/* and no header are JSON pages, a tie is JSON).
 */
export function wantsStream(accept: string | undefined): boolean {
  if (!accept?.trim()) return false;
  const given = ranges(accept);
  const stream = qualityOf(given, 'text/event-stream');
  return stream > 0 && stream > qualityOf(given, 'application/json');
}
