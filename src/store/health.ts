// The health role of the storage port: whether the database answers and can take
// writes, what an error of its driver means for a client, and what readiness and the
// metrics show of it (its write-ahead log on SQLite; its pool and notification
// connection on PostgreSQL).

/**
 * The store knows it cannot take writes now (its writer stopped) without trying. A
 * write that was under way when it stopped may or may not have been committed: it was
 * not acknowledged, and the client may retry (a PATCH sets a quantity, so a retry
 * cannot count twice).
 */
export class StoreUnavailable extends Error {
  override name = 'StoreUnavailable';
}

/** The database did not answer within the request's time; nothing of it was written. */
export class DeadlinePassed extends StoreUnavailable {
  override name = 'DeadlinePassed';
  constructor(what = 'the database did not answer in time') {
    super(what);
  }
}

/** Where the log's chain stands: a seq and the hash of the event there. */
export interface ChainPoint {
  seq: bigint;
  hash: string;
}

/**
 * The chain head (where the next write chains on) is not at the log's newest event: it
 * was moved behind the service's back. Every write would chain onto the wrong event or
 * collide with one that exists, so none is taken until an operator repairs the head.
 */
export class ChainHeadMismatch extends StoreUnavailable {
  override name = 'ChainHeadMismatch';
  constructor(
    readonly head: ChainPoint,
    readonly newest: ChainPoint,
  ) {
    super(
      `the chain head (seq ${head.seq}, hash ${head.hash}) does not match the newest event (seq ${newest.seq}, hash ${newest.hash}); writes are refused until the chain head is repaired`,
    );
  }
}

/** The ChainHeadMismatch an error is or was caused by, if any. */
export function chainHeadMismatchIn(error: unknown): ChainHeadMismatch | undefined {
  for (let e = error as { cause?: unknown } | undefined; e; e = e.cause as typeof e) {
    if (e instanceof ChainHeadMismatch) return e;
  }
  return undefined;
}

/** What readiness shows of the storage's write-ahead log. */
export interface StorageStatus {
  /** The log's size now. */
  walBytes: number;
  /** What an idle service checkpoints the log back to (or below). */
  walLimitBytes: number;
  /**
   * For how long checkpoints have been held back, null when they are not: the log has
   * frames that cannot be copied back (or cannot be emptied) because a read transaction
   * still reads an older snapshot. SQLite does not name the readers of other processes,
   * so this is the stand-in for the age of the oldest open read transaction.
   */
  walCheckpointBlockedForMs: number | null;
}

/** A connection pool's state (node-postgres's counts). */
interface PoolStatus {
  /** Connections open, in use or idle. */
  total: number;
  idle: number;
  /** Queries waiting for a connection. */
  waiting: number;
}

/** The connection that hears other instances' commits, and the last commit heard of. */
export interface NotificationStatus {
  /** up: heartbeats come back; overdue: one is late, so the cache is checked against the
   * database on every read; down: no connection (reconnecting). */
  state: 'up' | 'overdue' | 'down';
  /** Since when it is in that state (ISO 8601). */
  since: string;
  lastHeartbeatAt: string | null;
  /** When this instance last saw a commit (its own or another's); null: none since start. */
  lastCommitSeenAt: string | null;
  lastCommitSeenAgeSeconds: number | null;
}

export interface ConnectionStatus {
  pool: { inUse: number; idle: number; waiting: number };
  notifications: Omit<NotificationStatus, 'lastCommitSeenAt' | 'lastCommitSeenAgeSeconds'>;
  lastCommitSeenAt: string | null;
  lastCommitSeenAgeSeconds: number | null;
}

/**
 * What a store shows of itself, by kind. SQLite: its write-ahead log (undefined in
 * memory, which has none). PostgreSQL: its connection pool and what readiness shows of a
 * store shared by instances (its pool, its notification connection, the last change it saw).
 */
type StoreDiagnostics =
  { store: 'sqlite'; wal: StorageStatus | undefined } | { store: 'postgres'; pool: PoolStatus; connection: ConnectionStatus };

export interface StorageFault {
  kind: 'contention' | 'storage';
  /** The driver's own code, for the log (SQLITE_FULL, …). */
  code: string;
  /** What a client and readiness are told instead of "retry later", when retrying cannot
   * help until an operator acts. */
  advice?: string;
}

export interface StoreHealth {
  /** Rejects when the database does not answer. */
  ping(): Promise<void>;
  /**
   * A real write that needs new space, undone: rejects while the database cannot take
   * writes. A store whose writer stopped starts a new one here (the health check calls
   * this at most once a second while writes fail).
   */
  probeWrite(): Promise<void>;
  /** Why the store knows it cannot take writes now (its writer stopped, its file is no
   * longer at its path), without trying; undefined when it can try. */
  unavailable(): string | undefined;
  /** What readiness and the metrics show of this store, by kind. */
  diagnostics(): StoreDiagnostics;
  /**
   * What an error this store raised means for a client: contention (another writer held
   * the lock too long) or a storage fault (a full disk, a read-only or broken file), both
   * "not now" (503) rather than "broken" (500); undefined for anything else. Each adapter
   * knows its own driver's codes; nothing above the port does.
   */
  fault(error: unknown): StorageFault | undefined;
}
