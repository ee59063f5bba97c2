// Reads the environment once, validates it, and hands down a frozen configuration.
// Nothing else reads process.env.
export interface Config {
  readonly port: number;
  readonly host: string;
  readonly dbPath: string;
  readonly logLevel: string;
}

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

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
  return Object.freeze({ port: Number(port), host, dbPath: dbPathOf(env), logLevel });
}

/** The database path: INVENTORY_DB, or data/inventory.db. Operator commands use it too. */
export function dbPathOf(env: NodeJS.ProcessEnv): string {
  const path = env.INVENTORY_DB ?? 'data/inventory.db';
  if (path.trim() === '') throw new ConfigError('INVENTORY_DB must not be empty');
  return path;
}
