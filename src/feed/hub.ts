// The change feed's streams in this process. Each stream has a cursor (the last seq it
// was sent). A new stream catches up from the log page by page, waiting for its reader
// between pages. Catch-ups take turns in short slices of the event loop, so that any
// number of them leave other requests their pace, and streams at the same place share a
// page's read, render and bytes. Once a short page shows it has reached the tail, it goes
// live, and from then on the hub sends it what it reads after the tail: one query per
// change for all live streams, however many there are.
//
// Nothing is lost or sent twice in the hand-over: the hub reads every event after
// tailSeq in order, and every live stream has been sent everything up to tailSeq (it goes
// live only when its cursor is at or past it; an event committed while its catch-up query
// ran is after its cursor, so the hub's next read brings it). What the hub sends a stream
// is filtered by the stream's cursor, so an event its catch-up already sent is skipped.
// Seqs become visible in order on both stores, so a query never skips an older one.
//
// The hub reads after a change: when this process committed (committed(); at most once
// per commitReadGapMs, so that a stream of commits costs a read per gap, not per commit;
// the gap grows with the streams open, up to 4 times at 300, since each read costs a write
// to every live stream: fewer, larger writes were measured to cost the PATCH load less), and
// when the store's change token moved (SQLite: data_version, another process's commit;
// PostgreSQL: LISTEN/NOTIFY, or chain_head read while the listener is down), looked at
// every pollMs; and every second regardless, in case a notification was lost.
//
// Bounds: at most maxStreams; a reader more than maxBehindBytes or maxBehindMs behind is
// cut off (it resumes from its last id); a revoked key's streams end within keyCheckMs;
// close() (shutdown) sends every stream what was committed, then ends it.
import type { ServerResponse } from 'node:http';
import { Counter, Gauge, type Registry } from 'prom-client';
import { HttpError } from '../http/errors.ts';
import { repeatedWarnings, type Logger } from '../logger.ts';
import type { KeyStore } from '../store/keys.ts';
import type { ChainRow, EventLog } from '../store/event-log.ts';
import { sseMessage } from './event-json.ts';
import type { Projection } from '../store/projection.ts';

export interface FeedLimits {
  /** Streams open at once in this process; one more is answered 503. */
  maxStreams: number;
  /** Bytes a stream's reader may leave waiting in this process before it is cut off. */
  maxBehindBytes: number;
  /** How long a stream's output may wait for its reader before it is cut off. */
  maxBehindMs: number;
  /** A comment line goes to a stream that was sent nothing for this long. */
  heartbeatMs: number;
  /** How often the store's change token is looked at (commits of other processes). */
  pollMs: number;
  /** How often the keys of open streams are checked (revocation). */
  keyCheckMs: number;
  /** After this process commits, the hub reads at most once in this long: under a stream
   * of writes, each read (and each stream's write) then carries many commits, not one. */
  commitReadGapMs: number;
  /** At shutdown, how long a stream may take to receive what was committed. */
  closeGraceMs: number;
}

export const DEFAULT_FEED_LIMITS: FeedLimits = {
  maxStreams: 256,
  maxBehindBytes: 1024 * 1024,
  maxBehindMs: 30_000,
  heartbeatMs: 15_000,
  pollMs: 100,
  keyCheckMs: 500,
  commitReadGapMs: 10,
  closeGraceMs: 5_000,
};

/** Events a catch-up reads per query, and the hub per query after the tail. */
const CATCH_UP_PAGE = 256;
/** Full catch-up pages kept for streams that come to the same place. */
const SHARED_PAGES = 32;
/** The most time catch-ups take in one turn of the event loop (one page more at most). */
const CATCH_UP_SLICE_MS = 2;
const TAIL_PAGE = 1000;
/** The hub reads after the tail at least this often, whatever the change token says. */
const FALLBACK_MS = 1_000;

export type FeedStore = Pick<EventLog, 'eventsAfter'> & Pick<Projection, 'changeToken'> & { keys: Pick<KeyStore, 'authenticate'> };

export interface Feed {
  /** Throws the 503 to answer when no stream can be opened now (full, or shutting down). */
  admit(): void;
  /** Follows the log on res (its head written) from after seq `after`, for as long as key is valid. */
  follow(res: ServerResponse, after: bigint, key: string): void;
  /** This process committed events: live streams get them now. */
  committed(): void;
  /** Streams open now. */
  size(): number;
  /** Sends every stream what was committed until now, then ends it; admits no more. */
  close(): Promise<void>;
}

type CloseReason = 'client' | 'behind' | 'revoked' | 'shutdown' | 'error';
const CLOSE_REASONS: CloseReason[] = ['client', 'behind', 'revoked', 'shutdown', 'error'];

interface Stream {
  res: ServerResponse;
  key: string;
  /** The last seq sent. */
  cursor: bigint;
  live: boolean;
  done: boolean;
  /** The catch-up under way, if any. */
  pump?: Promise<void>;
  /** Since when output waits for the reader (write() said so), until 'drain'. */
  behindSince?: number;
  lastWrite: number;
}

export interface FeedDeps {
  store: FeedStore;
  logger: Logger;
  limits?: Partial<FeedLimits>;
  /** Where the feed's gauges go (the app's /metrics). */
  registry?: Registry;
  now?: () => number;
}

export function makeFeed({ store, logger, limits: given = {}, registry, now = Date.now }: FeedDeps): Feed {
  const limits: FeedLimits = { ...DEFAULT_FEED_LIMITS, ...given };
  const streams = new Set<Stream>();
  const warn = repeatedWarnings(logger);
  const registers = registry ? [registry] : [];
  new Gauge({
    name: 'inventory_feed_streams',
    help: 'Change feed streams (GET /v1/events as text/event-stream) open now.',
    registers,
    collect() {
      this.set(streams.size);
    },
  });
  const sent = new Counter({
    name: 'inventory_feed_events_sent_total',
    help: 'Events sent on change feed streams.',
    registers,
  });
  const closed = new Counter({
    name: 'inventory_feed_streams_closed_total',
    help: 'Change feed streams ended, by reason: client (went away), behind (its reader fell too far behind), revoked (its key), shutdown, error (reading the log failed).',
    labelNames: ['reason'] as const,
    registers,
  });
  for (const reason of CLOSE_REASONS) closed.labels(reason).inc(0);

  let closing = false;
  /** Every live stream was sent every event up to here; undefined until one goes live. */
  let tailSeq: bigint | undefined;
  /** A read scheduled after a commit, while the last one is too recent. */
  let coalesced: ReturnType<typeof setTimeout> | undefined;
  let reading = false;
  let readAgain = false;
  let lastRead = 0;
  let lastToken: string | undefined;
  let lastKeyCheck = 0;
  let ticking = false;
  let timer: NodeJS.Timeout | undefined;

  const finish = (s: Stream, reason: CloseReason) => {
    if (s.done) return;
    s.done = true;
    s.live = false;
    streams.delete(s);
    closed.labels(reason).inc();
    // A reader that is behind (or an error) loses the buffered rest: it resumes from its
    // last id. Otherwise the stream ends cleanly after what it was sent.
    if (reason === 'behind' || reason === 'error') s.res.destroy();
    else s.res.end();
    if (streams.size === 0) stopTimer();
  };

  const write = (s: Stream, text: string | Buffer) => {
    if (s.done) return;
    const ok = s.res.write(text);
    s.lastWrite = now();
    if (!ok) s.behindSince ??= now();
    if (s.res.writableLength > limits.maxBehindBytes) finish(s, 'behind');
  };

  /** Sends rows after the stream's cursor; texts are the rows' messages, all their concatenation. */
  const sendRendered = (s: Stream, rows: readonly ChainRow[], texts: readonly string[], all: Buffer) => {
    let first = 0;
    while (first < rows.length && rows[first]![0] <= s.cursor) first++;
    if (first === rows.length) return;
    // Live streams are nearly always at the tail, and streams catching up together at the
    // same page: the bytes encoded once serve them all.
    write(s, first === 0 ? all : texts.slice(first).join(''));
    s.cursor = rows[rows.length - 1]![0];
    sent.inc(rows.length - first);
  };
  const render = (rows: readonly ChainRow[]) => {
    const texts = rows.map(sseMessage);
    return { texts, all: Buffer.from(texts.join('')) };
  };
  interface Page {
    rows: ChainRow[];
    texts: string[];
    all: Buffer;
  }
  // Streams that catch up together (many readers starting from 0) share each page's
  // read and render. Only a full page is kept: it can never change (seqs become visible
  // in order), where a short one would hide what was committed since.
  const pages = new Map<bigint, Promise<Page>>();
  const catchUpPage = (after: bigint): Promise<Page> => {
    const shared = pages.get(after);
    if (shared) return shared;
    const page = store.eventsAfter(after, CATCH_UP_PAGE).then((rows) => ({ rows, ...render(rows) }));
    pages.set(after, page);
    // Runs before the callers' own continuations: a stream never reuses a short page.
    page.then(
      (p) => {
        if (p.rows.length < CATCH_UP_PAGE) pages.delete(after);
      },
      () => pages.delete(after),
    );
    if (pages.size > SHARED_PAGES) pages.delete(pages.keys().next().value!);
    return page;
  };
  const drained = (s: Stream) =>
    new Promise<void>((resolve) => {
      const done = () => {
        s.res.off('drain', done);
        s.res.off('close', done);
        resolve();
      };
      s.res.on('drain', done);
      s.res.on('close', done);
    });

  /** One page of a stream's catch-up; whether it has more to catch up. */
  const catchUpStep = async (s: Stream, final: boolean): Promise<boolean> => {
    if (s.done) return false;
    const { rows, texts, all } = await catchUpPage(s.cursor);
    if (s.done) return false;
    sendRendered(s, rows, texts, all);
    if (rows.length < CATCH_UP_PAGE) {
      if (final) return false;
      tailSeq ??= s.cursor;
      // Checked in the same turn as the page arrived: the hub cannot read in between.
      if (s.cursor >= tailSeq) {
        s.live = true;
        return false;
      }
    }
    return true;
  };

  // Catch-ups take turns, a page each, in slices of at most CATCH_UP_SLICE_MS of one turn
  // of the event loop; between slices the rest of the process (requests, the hub) runs.
  // However many streams catch up and however fast their readers take pages, the work
  // they add to one turn stays bounded; taking turns keeps them at the same place, where
  // they share pages.
  interface CatchingUp {
    s: Stream;
    final: boolean;
    resolve: () => void;
    reject: (error: unknown) => void;
  }
  const catching: CatchingUp[] = [];
  let slicing = false;
  const schedule = () => {
    if (slicing || catching.length === 0) return;
    slicing = true;
    setImmediate(() => void runSlice());
  };
  const runSlice = async () => {
    const until = performance.now() + CATCH_UP_SLICE_MS;
    try {
      while (catching.length > 0 && performance.now() < until) {
        const c = catching.shift()!;
        if (!c.s.done && c.s.res.writableNeedDrain) {
          // Its reader has not taken what it was sent: it waits out of the line.
          void drained(c.s).then(() => {
            catching.push(c);
            schedule();
          });
          continue;
        }
        let more: boolean;
        try {
          more = await catchUpStep(c.s, c.final);
        } catch (error) {
          c.reject(error);
          continue;
        }
        if (more) catching.push(c);
        else c.resolve();
      }
    } finally {
      slicing = false;
      schedule();
    }
  };

  /** Sends the stream the log after its cursor; then it goes live (or, at shutdown, stops). */
  const catchUp = (s: Stream, final: boolean) =>
    new Promise<void>((resolve, reject) => {
      catching.push({ s, final, resolve, reject });
      schedule();
    });

  const failed = (s: Stream, error: unknown) => {
    warn(
      'feed-read',
      1,
      { err: { message: (error as Error)?.message } },
      'a change feed stream could not read the log; it was closed (its reader resumes)',
    );
    finish(s, 'error');
  };

  /** Reads after the tail and sends it to every live stream; again while changes come. */
  const readTail = async () => {
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
          const rows = await store.eventsAfter(tailSeq, TAIL_PAGE);
          if (rows.length > 0) {
            const { texts, all } = render(rows);
            for (const s of streams) if (s.live) sendRendered(s, rows, texts, all);
          }
          const last = rows[rows.length - 1]?.[0];
          if (last !== undefined && (tailSeq === undefined || last > tailSeq)) tailSeq = last;
          if (rows.length < TAIL_PAGE) break;
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

  const checkKeys = async () => {
    const byKey = new Map<string, Stream[]>();
    for (const s of streams) byKey.set(s.key, [...(byKey.get(s.key) ?? []), s]);
    for (const [key, group] of byKey) {
      let valid: unknown;
      try {
        valid = await store.keys.authenticate(key);
      } catch (error) {
        // The store does not answer now: the key is checked again at the next round.
        warn('feed-keys', 1, { err: { message: (error as Error)?.message } }, 'the change feed could not check the keys of its streams');
        continue;
      }
      if (!valid) for (const s of group) finish(s, 'revoked');
    }
  };

  const tick = async () => {
    if (ticking) return;
    ticking = true;
    try {
      const at = now();
      for (const s of streams) {
        if (s.behindSince !== undefined && at - s.behindSince > limits.maxBehindMs) finish(s, 'behind');
        else if (at - s.lastWrite >= limits.heartbeatMs) write(s, ':\n\n');
      }
      let token: string | undefined;
      try {
        token = await store.changeToken();
      } catch {
        // The fallback below reads the log itself, which says what is wrong if it fails.
        token = undefined;
      }
      if (token === undefined || token !== lastToken || now() - lastRead >= FALLBACK_MS) {
        lastToken = token;
        void readTail();
      }
      if (now() - lastKeyCheck >= limits.keyCheckMs) {
        lastKeyCheck = now();
        await checkKeys();
      }
    } finally {
      ticking = false;
    }
  };

  const startTimer = () => {
    timer ??= setInterval(() => void tick(), limits.pollMs).unref();
  };
  const stopTimer = () => {
    clearInterval(timer);
    timer = undefined;
    // With no stream, nobody is owed the tail: the next stream starts it afresh.
    tailSeq = undefined;
    lastToken = undefined;
  };

  return {
    admit() {
      if (closing)
        throw new HttpError(503, 'unavailable', 'the service is shutting down; reconnect to another instance', { 'Retry-After': '1' });
      if (streams.size >= limits.maxStreams) {
        throw new HttpError(503, 'unavailable', `this instance has its ${limits.maxStreams} change feed streams open; retry later`, {
          'Retry-After': '5',
        });
      }
    },
    follow(res, after, key) {
      const s: Stream = { res, key, cursor: after, live: false, done: false, lastWrite: now() };
      streams.add(s);
      startTimer();
      res.on('drain', () => (s.behindSince = undefined));
      res.once('close', () => finish(s, 'client'));
      // The server keeps half-closed connections open (a PATCH's answer still goes out),
      // so a reader that hung up would hold its place until the next write failed.
      res.socket?.once('end', () => finish(s, 'client'));
      s.pump = catchUp(s, false).catch((error: unknown) => failed(s, error));
    },
    committed() {
      if (streams.size === 0 || coalesced) return;
      const gap = limits.commitReadGapMs * (1 + Math.min(3, streams.size / 100));
      const wait = lastRead + gap - now();
      if (wait <= 0) {
        void readTail();
        return;
      }
      coalesced = setTimeout(() => {
        coalesced = undefined;
        void readTail();
      }, wait);
    },
    size: () => streams.size,
    async close() {
      closing = true;
      const grace = setTimeout(() => {
        for (const s of streams) finish(s, 'behind');
      }, limits.closeGraceMs).unref();
      await Promise.all(
        [...streams].map(async (s) => {
          // The hub stops sending to it; its own last catch-up sends what was committed.
          s.live = false;
          await s.pump;
          if (s.done) return;
          await catchUp(s, true).catch((error: unknown) => failed(s, error));
          if (s.done) return;
          finish(s, 'shutdown');
        }),
      );
      clearTimeout(grace);
      stopTimer();
    },
  };
}
