// Catch-up: a new stream is sent the log after its cursor page by page, waiting for its
// reader between pages, until a short page shows it reached the tail; then it goes live.
//
// Catch-ups take turns, a page each, in slices of at most SLICE_MS of one turn of the
// event loop; between slices the rest of the process (requests, the tail publisher) runs.
// However many streams catch up and however fast their readers take pages, the work they
// add to one turn stays bounded; taking turns keeps them at the same place, where they
// share a page's read, render and bytes.
import type { EventLog } from '../store/event-log.ts';
import { renderPage, type FeedStream, type RenderedPage } from './feed-stream.ts';

/** Events a catch-up reads per query. */
const PAGE = 256;
/** Full pages kept for streams that come to the same place. */
const SHARED_PAGES = 32;
/** The most time catch-ups take in one turn of the event loop (one page more at most). */
const SLICE_MS = 2;

interface CatchUpDeps {
  store: Pick<EventLog, 'eventsAfter'>;
  /** Whether a stream caught up to cursor may go live (the tail publisher has sent every
   * live stream everything up to there); called in the turn its last page arrived. */
  reachedTail: (cursor: bigint) => boolean;
  /** Events sent to a stream. */
  onSent: (count: number) => void;
}

interface CatchUps {
  /** Sends the stream the log after its cursor; then it goes live, or (final, at shutdown) stops. */
  catchUp(s: FeedStream, final: boolean): Promise<void>;
}

interface Waiting {
  s: FeedStream;
  final: boolean;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/** The page after a seq, read and rendered once for the streams that come to it. */
function makeSharedPages(store: Pick<EventLog, 'eventsAfter'>): (after: bigint) => Promise<RenderedPage> {
  // Only a full page is kept: it can never change (seqs become visible in order), where a
  // short one would hide what was committed since.
  const pages = new Map<bigint, Promise<RenderedPage>>();
  return (after: bigint): Promise<RenderedPage> => {
    const shared = pages.get(after);
    if (shared) return shared;
    const page = store.eventsAfter(after, PAGE).then(renderPage);
    pages.set(after, page);
    // Runs before the callers' own continuations: a stream never reuses a short page.
    page.then(
      (p) => {
        if (p.rows.length < PAGE) pages.delete(after);
      },
      () => pages.delete(after),
    );
    if (pages.size > SHARED_PAGES) pages.delete(pages.keys().next().value!);
    return page;
  };
}

export function makeCatchUps({ store, reachedTail, onSent }: CatchUpDeps): CatchUps {
  const pageAfter = makeSharedPages(store);

  /** One page of a stream's catch-up; whether it has more to catch up. */
  const step = async (s: FeedStream, final: boolean): Promise<boolean> => {
    if (s.done()) return false;
    const page = await pageAfter(s.cursor());
    if (s.done()) return false;
    onSent(s.send(page));
    if (page.rows.length < PAGE) {
      if (final) return false;
      if (reachedTail(s.cursor())) {
        s.live = true;
        return false;
      }
    }
    return true;
  };

  const line: Waiting[] = [];
  let slicing = false;
  const schedule = () => {
    if (slicing || line.length === 0) return;
    slicing = true;
    setImmediate(() => void runSlice());
  };
  const runSlice = async () => {
    const until = performance.now() + SLICE_MS;
    try {
      while (line.length > 0 && performance.now() < until) {
        const w = line.shift()!;
        if (!w.s.done() && w.s.readerBehind()) {
          // Its reader has not taken what it was sent: it waits out of the line.
          void w.s.readerCaughtUp().then(() => {
            line.push(w);
            schedule();
          });
          continue;
        }
        let more: boolean;
        try {
          more = await step(w.s, w.final);
        } catch (error) {
          w.reject(error);
          continue;
        }
        if (more) line.push(w);
        else w.resolve();
      }
    } finally {
      slicing = false;
      schedule();
    }
  };

  return {
    catchUp: (s, final) =>
      new Promise<void>((resolve, reject) => {
        line.push({ s, final, resolve, reject });
        schedule();
      }),
  };
}
