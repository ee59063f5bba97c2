// Everything that writes, on one connection: the operations the worker thread runs for
// the service (worker.ts), or that run in place for an operator command or a test.
// Arguments and results are plain data (structured-cloneable), so the same functions
// serve both.
import type { Transaction } from 'better-sqlite3';
import type { Db } from '../database.ts';
import type { KeyScope, Revocation } from '../../keys.ts';
import type { BatchOptions, ReplayRow, Submission, SubmissionOutcome } from '../../event-log.ts';
import { StoreUnavailable } from '../../health.ts';
import { applyEvent, type Entry } from '../../../domain/apply-event.ts';
import { toLoggedEvent } from '../../replay-rows.ts';
import { makeEventWriter } from './append-batch.ts';
import { makeIdempotencyWriter } from '../idempotency.ts';
import { makeKeyWriter } from '../keys.ts';
import { makeProjectionTable } from '../projection.ts';
import type { SigningKeyData } from '../../../support/signing.ts';
import { keyAtStart, type SigningKeyAddition, type SigningKeyEntry, type SigningKeyRetirement } from '../../signing-keys.ts';
import { makeReceiptSigning, type ReceiptSigning } from '../../receipts/receipts.ts';
import { makeAdjustmentsRepair } from '../reads/adjustment-checks.ts';

interface WriterOptions {
  /** Why the database path no longer names the file this connection writes (file-identity.ts). */
  fileProblem?: () => string | undefined;
  /** Sign receipts on a thread of their own (the service's writer thread does). */
  signingThread?: boolean;
}

/** What one connection's operations share: its prepared writes, and the receipts' signer. */
interface Parts {
  events: ReturnType<typeof makeEventWriter>;
  keys: ReturnType<typeof makeKeyWriter>;
  idempotency: ReturnType<typeof makeIdempotencyWriter>;
  probe: Transaction<() => void>;
  swap: Transaction<(entries: Map<bigint, Entry>, after: number) => Replaced>;
  /** Signs every later batch's receipts with this key. */
  signWith(key: SigningKeyData): void;
}

interface Replaced {
  caughtUp: number;
  /** The stock_adjustments rows put right. */
  adjustments: number;
  before: Entry[];
  entries: Map<bigint, Entry>;
}

// The one table of the operations the writer serves. Its thread (worker.ts), the
// thread's client, the supervisor that restarts it and the store that writes in place
// all forward these names, and their types come from here: an operation added to the
// table reaches each of them.
const OPERATIONS = {
  appendBatch: (w: Parts, submissions: readonly Submission[], options?: BatchOptions): SubmissionOutcome[] =>
    w.events.appendBatch(submissions, options),
  createKey: (w: Parts, name: string, createdBy: string, at: string, scope?: KeyScope): string => w.keys.create(name, createdBy, at, scope),
  createFirstKey: (w: Parts, name: string, createdBy: string, at: string): string | undefined => w.keys.createFirst(name, createdBy, at),
  revokeKey: (w: Parts, name: string, revokedBy: string, at: string): Revocation => w.keys.revoke(name, revokedBy, at),
  probeWrite: (w: Parts): void => w.probe.immediate(),
  /** Enters the key in the key log (unless it is there) and signs every later batch's writes with it. */
  useSigningKey: (w: Parts, key: SigningKeyData, at: string, actor: string): void => {
    w.keys.startSigning(keyAtStart(key), at, actor);
    w.signWith(key);
  },
  addSigningKey: (w: Parts, entry: SigningKeyEntry, at: string, actor: string): SigningKeyAddition =>
    w.keys.addSigningKey(entry, at, actor),
  retireSigningKey: (w: Parts, keyId: string, at: string, actor: string): SigningKeyRetirement => w.keys.retireSigningKey(keyId, at, actor),
  expireIdempotency: (w: Parts, at: string, limit: number): number => w.idempotency.expire(at, limit),
  replaceProjection: (w: Parts, entries: Map<bigint, Entry>, after: number): Replaced => w.swap.immediate(entries, after),
};

export type WriterOperation = keyof typeof OPERATIONS;

/** The operations as a connection runs them, synchronously. */
export type Writer = {
  [K in WriterOperation]: (typeof OPERATIONS)[K] extends (w: Parts, ...args: infer A) => infer R ? (...args: A) => R : never;
};

/** The same operations as promises, as another thread or an asynchronous port runs them. */
export type AsyncWriter = { [K in WriterOperation]: (...args: Parameters<Writer[K]>) => Promise<ReturnType<Writer[K]>> };

type Operation = (...args: unknown[]) => unknown;

/** An object with a function for each operation of the table, each handing its name and
 * arguments to `run`. */
export function forwardOperations<W extends Record<WriterOperation, unknown>>(run: (op: WriterOperation, args: unknown[]) => unknown): W {
  const ops = Object.keys(OPERATIONS) as WriterOperation[];
  return Object.fromEntries(ops.map((op) => [op, (...args: unknown[]) => run(op, args)])) as W;
}

/** Calls the operation named op of a writer, synchronous or not, with args. */
export function invoke<W extends Record<WriterOperation, unknown>>(writer: W, op: WriterOperation, args: unknown[]): unknown {
  return (writer[op] as Operation)(...args);
}

export function makeWriter(db: Db, options: WriterOptions = {}): Writer {
  // A write into a file that is no longer at its path would be acknowledged and lost:
  // every operation checks before it starts, and a batch once more just before COMMIT.
  const requireFile = () => {
    const problem = options.fileProblem?.();
    if (problem) throw new StoreUnavailable(problem);
  };
  const projection = makeProjectionTable(db);
  const repairAdjustments = makeAdjustmentsRepair(db);
  const idempotency = makeIdempotencyWriter(db);
  let signing: ReceiptSigning | undefined;
  const logId = db.prepare('SELECT log_id FROM log_identity').pluck();
  // The readiness probe writes a row that needs new pages, and deletes it again.
  const insertPaddedRow = db.prepare('INSERT INTO service_health (id, padding) VALUES (1, zeroblob(16384))');
  const deletePaddedRow = db.prepare('DELETE FROM service_health WHERE id = 1');
  const since = db
    .prepare('SELECT seq, pet_id, version, type, data, recorded_at FROM events WHERE seq > ? ORDER BY seq')
    .safeIntegers(true)
    .raw();
  const parts: Parts = {
    events: makeEventWriter(db, projection, idempotency, requireFile, () => signing),
    keys: makeKeyWriter(db),
    idempotency,
    probe: db.transaction(() => {
      insertPaddedRow.run();
      deletePaddedRow.run();
    }),
    swap: db.transaction((entries: Map<bigint, Entry>, after: number) => {
      let caughtUp = 0;
      for (const row of since.iterate(after) as IterableIterator<ReplayRow>) {
        const event = toLoggedEvent(row);
        entries.set(event.petId, applyEvent(entries.get(event.petId), event));
        caughtUp++;
      }
      const before = projection.list();
      projection.replaceAll(entries.values());
      return { caughtUp, adjustments: repairAdjustments(), before, entries };
    }),
    signWith: (key) => {
      void signing?.close();
      signing = makeReceiptSigning(key, logId.get() as string, options.signingThread ? 'thread-sync' : 'in-place');
    },
  };
  return forwardOperations<Writer>((op, args) => {
    requireFile();
    return (OPERATIONS[op] as (w: Parts, ...args: unknown[]) => unknown)(parts, ...args);
  });
}
