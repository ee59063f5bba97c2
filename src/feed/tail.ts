// The tail publisher: reads the log after the tail once per change, for all live streams
// however many there are, and sends each what lies after its cursor.
//
// Nothing is lost or sent twice in the hand-over from catch-up: it reads every event
// after tailSeq in order, and every live stream has been sent everything up to tailSeq (a
// stream goes live only when its cursor is at or past it; an event committed while its
// catch-up query ran is after its cursor, so the next read brings it). What a stream is
// sent is filtered by its cursor, so an event its catch-up already sent is skipped. Seqs
// become visible in order on both stores, so a query never skips an older one.
//
// It reads after a change: when this process committed (committed(); at most once per
// gap, so that a run of commits costs a read per gap, not per commit; the gap grows with
// the streams open, since each read costs a write to every live stream), when the store's
// change token moved (SQLite: data_version, another process's commit; PostgreSQL:
// LISTEN/NOTIFY), looked at on each poll(); and every FALLBACK_MS regardless, in case a
// notification was lost.
import type { RepeatedWarning } from '../support/logger.ts';
import type { EventLog } from '../store/event-log.ts';
import type { Projection } from '../store/projection.ts';
import { renderPage, type FeedStream } from './feed-stream.ts';

const PAGE = 1000;
/** It reads after the tail at least this often, whatever the change token says. */
const FALLBACK_MS = 1_000;

interface TailDeps {
  store: Pick<EventLog, 'eventsAfter'> & Pick<Projection, 'changeToken'>;
  streams: ReadonlySet<FeedStream>;
  /** The gap between reads after this process's commits, with few streams open. */
  commitReadGapMs: number;
  onSent: (count: number) => void;
  warn: RepeatedWarning;
  now: () => number;
}

interface TailPublisher {
  /** Whether a stream whose catch-up reached cursor may go live (see above). */
  reachedTail: (cursor: bigint) => boolean;
  /** This process committed: read soon (coalesced with the commits close after it). */
  committed: () => void;
  /** Reads if the change token moved, or the fallback is due. */
  poll: () => Promise<void>;
  /** No stream is open: nobody is owed the tail, the next stream starts it afresh. */
  reset: () => void;
}

/** The store's change token; undefined when the store does not answer (the fallback
 * then reads the log itself, which says what is wrong if it fails). */
async function changeTokenOrNone(store: Pick<Projection, 'changeToken'>): Promise<string | undefined> {
  try {
    return await store.changeToken();
  } catch {
    return undefined;
  }
}

export function makeTailPublisher({ store, streams, commitReadGapMs, onSent, warn, now }: TailDeps): TailPublisher {
  /** Every live stream was sent every event up to here; undefined until one goes live. */
  let tailSeq: bigint | undefined;
  /** A read scheduled after a commit, while the last one is too recent. */
  let coalesced: ReturnType<typeof setTimeout> | undefined;
  let reading = false;
  let readAgain = false;
  let lastRead = 0;
  let lastToken: string | undefined;

  /** Reads after the tail and sends it to every live stream; again while changes come. */
  const read = async () => {
    if (reading) {
      readAgain = true;
      return;
    }
    reading = true;
    try {
      do {
        readAgain = false;
        lastRead = now();
        while (tailSeq !== undefined && streams.size > 0) {
          const rows = await store.eventsAfter(tailSeq, PAGE);
          if (rows.length > 0) {
            const page = renderPage(rows);
            for (const s of streams) if (s.live) onSent(s.send(page));
          }
          const last = rows[rows.length - 1]?.[0];
          if (last !== undefined && (tailSeq === undefined || last > tailSeq)) tailSeq = last;
          if (rows.length < PAGE) break;
        }
      } while (readAgain && streams.size > 0);
    } catch (error) {
      // Tried again at the next poll: the streams stay open, their cursors where they are.
      lastToken = undefined;
      warn('feed-tail', 1, { err: { message: (error as Error)?.message } }, 'the change feed could not read the log; trying again');
    } finally {
      reading = false;
    }
  };

  return {
    reachedTail(cursor) {
      tailSeq ??= cursor;
      return cursor >= tailSeq;
    },
    committed() {
      if (streams.size === 0 || coalesced) return;
      const gap = commitReadGapMs * (1 + Math.min(3, streams.size / 100));
      const wait = lastRead + gap - now();
      if (wait <= 0) {
        void read();
        return;
      }
      coalesced = setTimeout(() => {
        coalesced = undefined;
        void read();
      }, wait);
    },
    async poll() {
      const token = await changeTokenOrNone(store);
      if (token === undefined || token !== lastToken || now() - lastRead >= FALLBACK_MS) {
        lastToken = token;
        void read();
      }
    },
    reset() {
      tailSeq = undefined;
      lastToken = undefined;
    },
  };
}
