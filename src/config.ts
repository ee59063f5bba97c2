// Reads the service's environment once, validates it, and hands down a frozen
// configuration: nothing else in the service reads process.env. (The operator commands
// read their own few variables, INVENTORY_DB and the user's name, in cli/common.ts.)
import { foreignSchemeProblem } from './store/target.ts';

export interface Config {
  readonly port: number;
  readonly host: string;
  readonly dbPath: string;
  readonly logLevel: string;
  /** Origins allowed by CORS, exactly as browsers send them in Origin; none by default. */
  readonly corsOrigins: readonly string[];
  /** Change feed streams this instance holds open at once (FEED_MAX_STREAMS). */
  readonly feedMaxStreams: number;
  /** Change feed streams one key may hold open on this instance (FEED_MAX_STREAMS_PER_KEY). */
  readonly feedMaxStreamsPerKey: number;
  /** Requests one key may have in flight on this instance (MAX_REQUESTS_PER_KEY). */
  readonly maxRequestsPerKey: number;
  /** The longest a change feed stream stays open, in ms (FEED_STREAM_MAX_SECONDS). */
  readonly feedStreamMaxMs: number;
  /** How long the answer of a PATCH with an Idempotency-Key is kept, in ms (IDEMPOTENCY_TTL_HOURS). */
  readonly idempotencyTtlMs: number;
  /** The instance's Ed25519 signing key, a PKCS#8 PEM file made when missing (INVENTORY_SIGNING_KEY). */
  readonly signingKeyPath: string;
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export class ConfigError extends Error {
  override name = 'ConfigError';
}

export function readConfig(env: NodeJS.ProcessEnv): Config {
  const port = env.PORT ?? '8080';
  if (!/^\d{1,5}$/.test(port) || Number(port) > 65535) {
    throw new ConfigError(`PORT must be a port number from 0 to 65535, not ${JSON.stringify(port)}`);
  }
  const host = env.HOST ?? '127.0.0.1';
  if (host.trim() === '') throw new ConfigError('HOST must not be empty');
  const logLevel = env.LOG_LEVEL ?? 'info';
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, not ${JSON.stringify(logLevel)}`);
  }
  const corsOrigins = Object.freeze(corsOriginsOf(env.CORS_ORIGINS ?? ''));
  const feedMaxStreams = env.FEED_MAX_STREAMS ?? '256';
  if (!/^[1-9][0-9]{0,5}$/.test(feedMaxStreams)) {
    throw new ConfigError(`FEED_MAX_STREAMS must be a whole number from 1 to 999999, not ${JSON.stringify(feedMaxStreams)}`);
  }
  const feedMaxStreamsPerKey = wholeNumber(env, 'FEED_MAX_STREAMS_PER_KEY', '16');
  const maxRequestsPerKey = wholeNumber(env, 'MAX_REQUESTS_PER_KEY', '64');
  const streamMax = env.FEED_STREAM_MAX_SECONDS ?? '300';
  if (!/^[1-9][0-9]{0,4}$/.test(streamMax) || Number(streamMax) > 86400) {
    throw new ConfigError(`FEED_STREAM_MAX_SECONDS must be a whole number of seconds from 1 to 86400, not ${JSON.stringify(streamMax)}`);
  }
  const ttl = env.IDEMPOTENCY_TTL_HOURS ?? '24';
  // Whole hours, at least one: a client's retries must outlive the ordinary outages.
  if (!/^\d{1,5}$/.test(ttl) || Number(ttl) < 1 || Number(ttl) > 8760) {
    throw new ConfigError(`IDEMPOTENCY_TTL_HOURS must be a whole number of hours from 1 to 8760, not ${JSON.stringify(ttl)}`);
  }
  const signingKeyPath = signingKeyPathOf(env);
  return Object.freeze({
    port: Number(port),
    host,
    dbPath: dbPathOf(env),
    logLevel,
    corsOrigins,
    idempotencyTtlMs: Number(ttl) * 3600_000,
    feedMaxStreams: Number(feedMaxStreams),
    feedMaxStreamsPerKey,
    maxRequestsPerKey,
    feedStreamMaxMs: Number(streamMax) * 1000,
    signingKeyPath,
  });
}

/** A whole number from 1 to 999999 in env[name], or its default. */
function wholeNumber(env: NodeJS.ProcessEnv, name: string, fallback: string): number {
  const value = env[name] ?? fallback;
  if (!/^[1-9][0-9]{0,5}$/.test(value))
    throw new ConfigError(`${name} must be a whole number from 1 to 999999, not ${JSON.stringify(value)}`);
  return Number(value);
}

/**
 * CORS_ORIGINS: comma-separated origins, each compared exactly with a browser's Origin
 * header, so each must be written as browsers write one: scheme, lower-case host and a
 * port only when not the default (https://shop.example.com, http://localhost:3000).
 */
function corsOriginsOf(value: string): string[] {
  if (value.trim() === '') return [];
  return value.split(',').map((item) => {
    const origin = item.trim();
    const bad = (why: string) =>
      new ConfigError(`CORS_ORIGINS must be comma-separated origins such as https://shop.example.com; ${JSON.stringify(origin)} ${why}`);
    if (origin === '') throw bad('is empty (two commas in a row?)');
    if (origin.includes('*')) throw bad('is a wildcard: name each origin');
    let url: URL;
    try {
      url = new URL(origin);
    } catch {
      throw bad('is not an origin');
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw bad('is not http or https');
    if (url.origin !== origin)
      throw bad(
        `is not written as a browser sends it: ${JSON.stringify(url.origin)} (no path, no trailing slash, lower-case host, no default port)`,
      );
    return origin;
  });
}

/** The database when neither INVENTORY_DB nor --db names one. */
export const DEFAULT_DB_PATH = 'data/inventory.db';
/** The signing key when INVENTORY_SIGNING_KEY names none. */
const DEFAULT_SIGNING_KEY_PATH = 'data/signing-key.pem';

/** The database path: INVENTORY_DB, or DEFAULT_DB_PATH. Operator commands use it too. */
/** The instance's signing key file (INVENTORY_SIGNING_KEY); throws ConfigError when empty. */
export function signingKeyPathOf(env: NodeJS.ProcessEnv): string {
  const path = env.INVENTORY_SIGNING_KEY ?? DEFAULT_SIGNING_KEY_PATH;
  if (path.trim() === '') throw new ConfigError('INVENTORY_SIGNING_KEY must not be empty');
  return path;
}

export function dbPathOf(env: NodeJS.ProcessEnv): string {
  const path = env.INVENTORY_DB ?? DEFAULT_DB_PATH;
  if (path.trim() === '') throw new ConfigError('INVENTORY_DB must not be empty');
  const problem = foreignSchemeProblem(path, 'INVENTORY_DB');
  if (problem) throw new ConfigError(problem);
  return path;
}
