// The service's structured log: JSON lines on standard output (readable lines when
// standard output is a terminal), one per request plus warnings and errors. It is never given keys or Authorization headers (only chosen
// fields are logged), so it needs no redaction pass.
// Lines are encoded into blocks of 64 KiB as they come, each block handed to the writer
// (sonic-boom, in buffer mode) as one write: a line's string dies at once rather than
// waiting in a list for its block, and neither sonic-boom nor the file write measures or
// encodes it again. A timer flushes a partial block within a second, and so does exit.
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
}

/** A destination for pino that encodes its lines into blocks and hands writer each
 * block whole. */
export function inBlocks(writer: BlockWriter, blockBytes = BLOCK_BYTES) {
  let block = Buffer.allocUnsafe(blockBytes);
  let used = 0;
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
      handOver();
      writer.flush(cb);
    },
    flushSync(): void {
      handOver();
      writer.flushSync();
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
  process.on('exit', () => stdout.flushSync());
  return pino(options, stdout);
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
