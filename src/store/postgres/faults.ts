// What PostgreSQL's errors mean for a client (the port's fault()): waiting for a lock too
// long, a deadlock or a serialization failure is contention; a lost or refused
// connection, a server shutting down, a full disk or a read-only database is a storage
// fault. Both are "not now" (503), not "broken" (500).
import type { StorageFault } from '../health.ts';

const CONTENTION = new Set(['55P03', '40P01', '40001']);
// Classes: 08 connection exception, 53 insufficient resources (disk full, out of memory,
// too many connections), 57 operator intervention (admin shutdown, crash shutdown,
// cannot connect now), 58 system error (I/O), and 25006 read_only_sql_transaction.
const STORAGE_CLASSES = ['08', '53', '57', '58'];
const NODE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);
// node-postgres's own words when a connection ends or a wait runs out.
const DRIVER_MESSAGES = [
  /^Connection terminated/,
  /timeout exceeded when trying to connect/,
  /^Query read timeout$/,
  /Client has encountered a connection error/,
  /^Client was closed and is not queryable$/,
  /Cannot use a pool after calling end/,
];

export function postgresFault(error: unknown): StorageFault | undefined {
  if (!(error instanceof Error)) return undefined;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (CONTENTION.has(code)) return { kind: 'contention', code };
    if (code === '25006' || STORAGE_CLASSES.includes(code.slice(0, 2))) return { kind: 'storage', code };
    if (NODE_CODES.has(code)) return { kind: 'storage', code };
  }
  if (DRIVER_MESSAGES.some((pattern) => pattern.test(error.message))) return { kind: 'storage', code: 'CONNECTION_LOST' };
  return undefined;
}
