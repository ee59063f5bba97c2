// The service's structured log: JSON lines on standard output (readable lines when
// standard output is a terminal), one per request plus warnings and errors. It is never given keys or Authorization headers (only chosen
// fields are logged), so it needs no redaction pass.
// Lines are written in blocks of 4 KiB rather than one system call each; a timer
// flushes a partial block within a second, and so does exit.
import pino from 'pino';
import pretty from 'pino-pretty';

export type Logger = pino.Logger;

const FLUSH_MS = 1000;

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  const options: pino.LoggerOptions = { level, base: undefined, timestamp: pino.stdTimeFunctions.isoTime };
  if (destination) return pino(options, destination);
  // A person at a terminal reads lines, not JSON; a pipe or a file gets JSON.
  if (process.stdout.isTTY) return pino(options, pretty({ colorize: true, translateTime: 'SYS:HH:MM:ss.l', sync: true }));
  const stdout = pino.destination({ dest: 1, minLength: 4096, sync: false });
  setInterval(() => stdout.flush(), FLUSH_MS).unref();
  process.on('exit', () => stdout.flushSync());
  return pino(options, stdout);
}
