// The service's structured log: JSON lines on standard output (readable lines when
// standard output is a terminal), one per request plus warnings and errors. It is never given keys or Authorization headers (only chosen
// fields are logged), so it needs no redaction pass.
// Lines are encoded into blocks of 64 KiB as they come, each block handed to the writer
// (sonic-boom, in buffer mode) as one write: a line's string dies at once rather than
// waiting in a list for its block, and neither sonic-boom nor the file write measures or
// encodes it again. A timer flushes a partial block within a second. A shutdown ends
// the log (endLog) before it exits, so that the lines of a write still under way are
// neither lost nor passed by the ones behind them; any other exit flushes what it can.
import pino from 'pino';
import pretty from 'pino-pretty';

export type Logger = pino.Logger;

const FLUSH_MS = 1000;
/** Bytes of log lines gathered before they are written. */
const BLOCK_BYTES = 64 * 1024;

/** What inBlocks needs of sonic-boom: in buffer mode, it writes Buffers. */
interface BlockWriter {
  write(block: Buffer): boolean;
  flush(cb?: (err?: Error) => void): void;
  flushSync(): void;
  /** Writes what waits, in order, then closes (emits 'close'; 'error' if a write fails). */
  end(): void;
  once(event: 'close' | 'error', listener: () => void): unknown;
}

/** A destination for pino that encodes its lines into blocks and hands writer each
 * block whole. */
export function inBlocks(writer: BlockWriter, blockBytes = BLOCK_BYTES) {
  let block = Buffer.allocUnsafe(blockBytes);
  let used = 0;
  /** Set by end: the writer is closing, and takes nothing more. */
  let ended = false;
  const handOver = () => {
    if (used === 0) return;
    // The writer keeps the block until it is written: the next one is a new buffer.
    const full = block.subarray(0, used);
    block = Buffer.allocUnsafe(blockBytes);
    used = 0;
    writer.write(full);
  };
  return {
    write(line: string): boolean {
      // After the end (the grace period's last line, while the end waits): the writer
      // takes no more.
      if (ended) return false;
      // A UTF-16 unit is at most 3 bytes of UTF-8: a line that may not fit in what is
      // left goes into the next block, and one longer than a block goes on its own.
      const most = line.length * 3;
      if (used + most > block.length) {
        handOver();
        if (most > block.length) {
          writer.write(Buffer.from(line));
          return true;
        }
      }
      used += block.write(line, used);
      return true;
    },
    /** Hands over the partial block; the writer writes it without waiting for more. */
    flush(cb?: (err?: Error) => void): void {
      // The timer's flush after the end: the writer, closed, has nothing to flush.
      if (ended) return cb?.();
      handOver();
      writer.flush(cb);
    },
    flushSync(): void {
      if (ended) return;
      handOver();
      writer.flushSync();
    },
    /** Hands over the partial block and ends the writer: done once every line is written. */
    end(done: () => void): void {
      if (ended) return done();
      handOver();
      ended = true;
      // A standard output that fails (its reader gone) is done too: nothing more will be
      // written, and the exit must not wait for a close that does not come.
      let called = false;
      const once = () => {
        if (!called) done();
        called = true;
      };
      writer.once('close', once);
      writer.once('error', once);
      writer.end();
    },
  };
}

/** pino's isoTime, formatted once per millisecond: under load many lines share one, and
 * toISOString was a tenth of a request's logging. */
function isoTimeOncePerMs(): () => string {
  let ms = -1;
  let text = '';
  return () => {
    const now = Date.now();
    if (now !== ms) {
      ms = now;
      text = `,"time":"${new Date(now).toISOString()}"`;
    }
    return text;
  };
}

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  const options: pino.LoggerOptions = { level, base: undefined, timestamp: isoTimeOncePerMs() };
  if (destination) return pino(options, destination);
  // A person at a terminal reads lines, not JSON; a pipe or a file gets JSON.
  if (process.stdout.isTTY) return pino(options, pretty({ colorize: true, translateTime: 'SYS:HH:MM:ss.l', sync: true }));
  // sonic-boom's types know its write of strings only: in buffer mode it takes Buffers.
  const stdout = inBlocks(pino.destination({ dest: 1, sync: false, contentMode: 'buffer' }) as unknown as BlockWriter);
  setInterval(() => stdout.flush(), FLUSH_MS).unref();
  // An exit that did not end the log first (a failed start): sonic-boom's flushSync
  // writes what waits, though a write under way may then be passed or cut short.
  process.on('exit', () => stdout.flushSync());
  const logger = pino(options, stdout);
  endings.set(logger, (done) => stdout.end(done));
  return logger;
}

/** How each logger of createLogger that writes standard output in blocks is ended. */
const endings = new WeakMap<Logger, (done: () => void) => void>();

/**
 * Ends the log before the process exits: resolves once every line logged so far is
 * written, a write under way included, in order. Lines logged after it are dropped. A
 * logger that writes synchronously (a terminal, a destination given) has nothing to wait
 * for. It waits as long as standard output takes to accept the lines: the caller's own
 * deadline (the shutdown's grace period) bounds it.
 */
export function endLog(logger: Logger): Promise<void> {
  const end = endings.get(logger);
  if (!end) return Promise.resolve();
  return new Promise((resolve) => end(resolve));
}

export type RepeatedWarning = (key: string, count: number, fields: Record<string, unknown>, message: string) => void;

/**
 * Warnings that may come in floods (every request failing the same way on a full disk,
 * thousands of stalled connections): the first of a kind is logged at once, then at most
 * one line a second per kind with `count`, how many happened since the line before.
 * A quiet second ends the kind's window, so the next one is again logged at once.
 */
export function repeatedWarnings(
  logger: Logger,
  deps: { everyMs?: number; setTimer?: (run: () => void, ms: number) => void; level?: 'warn' | 'debug' } = {},
): RepeatedWarning {
  const everyMs = deps.everyMs ?? 1000;
  const log = logger[deps.level ?? 'warn'].bind(logger);
  // Unref'd: a pending summary never keeps the process alive.
  const setTimer = deps.setTimer ?? ((run, ms) => setTimeout(run, ms).unref());
  const open = new Map<string, { count: number; fields: Record<string, unknown>; message: string }>();
  const close = (key: string) => {
    const window = open.get(key)!;
    if (window.count === 0) {
      open.delete(key);
      return;
    }
    log({ ...window.fields, count: window.count, perMs: everyMs }, window.message);
    window.count = 0;
    setTimer(() => close(key), everyMs);
  };
  return (key, count, fields, message) => {
    const window = open.get(key);
    if (window) {
      window.count += count;
      window.fields = fields;
      return;
    }
    log({ ...fields, count }, message);
    open.set(key, { count: 0, fields, message });
    setTimer(() => close(key), everyMs);
  };
}
