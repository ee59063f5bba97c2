// The service's structured log: JSON lines on standard output, one per request plus
// warnings and errors. It never receives keys or Authorization headers; the redaction
// below is a second line of defence should a header object ever be logged.
import pino from 'pino';

export type Logger = pino.Logger;

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  const options: pino.LoggerOptions = {
    level,
    base: undefined,
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: { paths: ['*.authorization', '*.headers.authorization', 'key'], censor: '[redacted]' },
  };
  return destination ? pino(options, destination) : pino(options);
}
