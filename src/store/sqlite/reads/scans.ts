// The scan connection's turns. A scan (the whole projection, the log) is read a page at a
// time from one statement, which holds one snapshot for its whole run and keeps the
// connection busy while it is being stepped: scans take the connection one at a time.
// With `yieldBetweenPages` (the service) the event loop gets a turn between pages, so a
// long scan never stalls it.
import { setImmediate as nextTurn } from 'node:timers/promises';

/** The rows of one page of a scan. */
export const PAGE_ROWS = 256;

export interface Scans {
  /** Runs `run` while holding the scan connection. */
  exclusive<T>(run: () => Promise<T>): Promise<T>;
  /** A scan that holds the connection for its whole run; a consumer that stops early releases it. */
  scan<T>(open: () => IterableIterator<T>, map?: (row: T) => T): AsyncIterable<T[]>;
  /** Rows a page at a time, for a caller that holds the connection already. */
  pages<T>(rows: IterableIterator<T>, map?: (row: T) => T): AsyncIterable<T[]>;
  /** Whether the event loop gets a turn between two pages (nextTurn). */
  yieldBetweenPages: boolean;
}

/** A queue of one: each caller waits for the release of the one before. */
function makeTurns(): () => Promise<() => void> {
  let tail: Promise<void> = Promise.resolve();
  return () => {
    let release!: () => void;
    const done = new Promise<void>((resolve) => (release = resolve));
    const ready = tail.then(() => release);
    tail = tail.then(() => done);
    return ready;
  };
}

export function makeScans(options: { yieldBetweenPages: boolean }): Scans {
  const acquire = makeTurns();

  async function* pages<T>(rows: IterableIterator<T>, map: (row: T) => T = (r) => r): AsyncIterable<T[]> {
    try {
      let page: T[] = [];
      for (const row of rows) {
        page.push(map(row));
        if (page.length === PAGE_ROWS) {
          yield page;
          page = [];
          if (options.yieldBetweenPages) await nextTurn();
        }
      }
      if (page.length > 0) yield page;
    } finally {
      rows.return?.();
    }
  }

  async function* scan<T>(open: () => IterableIterator<T>, map?: (row: T) => T): AsyncIterable<T[]> {
    const release = await acquire();
    try {
      yield* pages(open(), map);
    } finally {
      release();
    }
  }

  return {
    async exclusive(run) {
      const release = await acquire();
      try {
        return await run();
      } finally {
        release();
      }
    },
    scan,
    pages,
    yieldBetweenPages: options.yieldBetweenPages,
  };
}
