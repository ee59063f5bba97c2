// The stores a behavioural test runs against. Each target makes a fresh, empty database,
// opens the storage port on it, and knows how to break it the ways tests need (a full
// disk, a read-only database, an attacker with direct access): a test written against
// StoreTarget runs unchanged on every entry of storeTargets().
import type { InventoryStore } from '../../src/store/port.ts';
import { OVERDUE_MS } from '../../src/store/postgres/listener-heartbeat.ts';
import { postgresTarget } from './postgres-target.ts';
import { sqliteTarget } from './sqlite-target.ts';

/** A store on a path (SQLite) or URL (PostgreSQL), by the application's own openStore: the tests' one way to open one outside a target. */
export { openStore } from '../../src/store/open.ts';

export interface FreshDatabase {
  /** What --db and INVENTORY_DB take: a file path for SQLite, a URL for PostgreSQL. */
  db: string;
  /** Removes the database and everything the target made for it. */
  cleanup: () => Promise<void>;
}

interface OpenOptions {
  /** The clock that stamps keys (the command handler has its own). */
  now?: () => number;
  /** 'thread': writes off the event loop, as the service runs; 'inline' (default): in place. */
  writer?: 'inline' | 'thread';
  /** Read only, as the commands that only read open it. */
  readonly?: boolean;
}

/** Puts back what a fault broke. */
type Undo = () => Promise<void>;

/** Faults of a store this target opened with the inline writer, each undone by what it returns. */
export interface StoreFaults {
  /** No room to grow past roomBytes more (a full disk): a write that needs more space fails. */
  fillDisk(roomBytes?: number): Promise<Undo>;
  /** The driver's code for that fault, as the service logs it. */
  diskFullCode: string;
  /** The database refuses writes (a read-only file or role). */
  readOnly(): Promise<Undo>;
  /** The projection's table is gone: reads fail with an error nobody planned for. */
  dropProjection(): Promise<{ undo: Undo; driverMessage: RegExp }>;
  /** Whether the store's write connection is inside a transaction now. */
  inTransaction(): boolean;
}

/** What someone with direct access to the database (not through the service) can do. */
interface Tamper {
  /** Deletes the newest event past every guard; returns its seq. */
  deleteNewestEvent(db: string): Promise<number>;
  /** Makes every commit that holds an event with this request id fail when it commits. */
  failCommitsOf(db: string, requestId: string): Promise<void>;
  /** Runs sql as the database's owner (a superuser on PostgreSQL), guards in place. */
  asOwner(db: string, sql: string): Promise<void>;
  /** Runs sql past every guard: SQLite's triggers dropped for it (and put back), PostgreSQL's off for the session. */
  pastGuards(db: string, sql: string): Promise<void>;
}

export interface StoreTarget {
  name: 'sqlite' | 'postgres';
  fresh(): Promise<FreshDatabase>;
  /** The port on db (which fresh() made, or one a test seeded); creates the schema when missing. */
  open(db: string, options?: OpenOptions): Promise<InventoryStore>;
  /** Faults of a store open() returned (inline writer only). */
  faults(store: InventoryStore): StoreFaults;
  tamper: Tamper;
}

/** How late another process's commit may show in a running service's list, by store:
 * SQLite asks the file on every GET (at once); PostgreSQL hears commits through
 * LISTEN/NOTIFY, within the listening connection's overdue limit (docs/scaling.md gives
 * the delays measured under load). */
export const FRESH_MS: Record<StoreTarget['name'], number> = { sqlite: 0, postgres: OVERDUE_MS };

/** Every store the behavioural tests run against. */
export function storeTargets(): StoreTarget[] {
  return [sqliteTarget(), postgresTarget()];
}

/** The first target: for tests that need a store but are about something else. */
export function defaultTarget(): StoreTarget {
  return storeTargets()[0]!;
}
