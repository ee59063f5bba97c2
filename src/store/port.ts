// The storage port: everything the service and the operator commands ask of a database,
// by role, each in its own module: the event log (event-log.ts), the projection
// (projection.ts), the keys (keys.ts), the stored answers of retried requests
// (idempotency.ts), the auditors' reads (audit-reads.ts), the signing keys (signing-keys.ts), copying a history
// (history-copy.ts) and health (health.ts). Each consumer takes the narrowest role it
// needs; a store implements them all. Each database has one adapter behind it
// (src/store/sqlite/, src/store/postgres/); nothing above src/store knows which, or
// speaks SQL.
import type { AuditReads } from './audit-reads.ts';
import type { EventLog } from './event-log.ts';
import type { StoreHealth } from './health.ts';
import type { HistoryCopy } from './history-copy.ts';
import type { IdempotencyStore } from './idempotency.ts';
import type { KeyStore } from './keys.ts';
import type { Projection } from './projection.ts';
import type { SigningKeyLog } from './signing-keys.ts';
import type { SigningKeyData } from '../support/signing.ts';

/** How a store is opened, on either database. */
export interface OpenOptions {
  /** Read only: writes nothing, takes no write lock. Refuses a missing database or a schema not the code's. */
  readonly?: boolean;
  /** Use an existing database as it is: refuses a missing one or a schema not the code's; creates and upgrades nothing. */
  mustExist?: boolean;
  /** An auditor's read (verify-log, audit, stock-at; with readonly): a version in
   * schema_migrations that this code does not know, beside all it does, is a warning, not
   * a refusal, since anyone with the database can add such a row. */
  auditing?: boolean;
  /** Told the names of the migrations this open applied (none when the schema was current). */
  onMigrated?: (applied: string[]) => void;
  /** The instance's signing key: entered in the key log at open, then every appended
   * submission gets a Log-Receipt. Without one, nothing is signed (operator commands). */
  signingKey?: SigningKeyData;
}

export interface InventoryStore extends EventLog, Projection, AuditReads, HistoryCopy, StoreHealth, SigningKeyLog {
  keys: KeyStore;
  /** The stored answers of requests sent with an Idempotency-Key (written by appendBatch). */
  idempotency: IdempotencyStore;
  close(): Promise<void>;
}
