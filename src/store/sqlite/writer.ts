// Everything that writes, on one connection: the operations the worker thread runs for
// the service (worker.ts), or that run in place for an operator command or a test.
// Arguments and results are plain data (structured-cloneable), so the same functions
// serve both.
import type { Db } from './database.ts';
import type { KeyScope, Revocation } from '../keys.ts';
import type { Appended, BatchOptions, Outcome, ReplayRow, Submission } from '../event-log.ts';
import { StoreUnavailable } from '../health.ts';
import { applyEvent, type Entry } from '../../domain/apply-event.ts';
import { toAppliedEvent } from '../replay-rows.ts';
import { makeEventWriter } from './append-batch.ts';
import { makeIdempotencyWriter } from './idempotency.ts';
import { makeKeyWriter } from './keys.ts';
import { makeProjectionTable } from './projection.ts';
import { makeSigner, type SigningKeyData } from '../../support/signing.ts';
import type { SigningKeyAddition, SigningKeyEntry, SigningKeyRetirement } from '../signing-keys.ts';
import { makeReceiptSigning, type ReceiptSigning } from '../receipts.ts';

export interface Writer {
  appendBatch(submissions: readonly Submission[], options?: BatchOptions): Outcome<Appended[]>[];
  createKey(name: string, createdBy: string, at: string, scope?: KeyScope): string;
  createFirstKey(name: string, createdBy: string, at: string): string | undefined;
  revokeKey(name: string, revokedBy: string, at: string): Revocation;
  probeWrite(): void;
  /** Enters the key in the key log (unless it is there) and signs every later batch's writes with it. */
  useSigningKey(key: SigningKeyData, at: string, actor: string): void;
  addSigningKey(entry: SigningKeyEntry, at: string, actor: string): SigningKeyAddition;
  retireSigningKey(keyId: string, at: string, actor: string): SigningKeyRetirement;
  expireIdempotency(at: string, limit: number): number;
  replaceProjection(entries: Map<bigint, Entry>, after: number): { caughtUp: number; before: Entry[]; entries: Map<bigint, Entry> };
}

export interface WriterOptions {
  /** Why the database path no longer names the file this connection writes (file-identity.ts). */
  fileProblem?: () => string | undefined;
  /** Sign receipts on a thread of their own (the service's writer thread does). */
  signingThread?: boolean;
}

export function makeWriter(db: Db, options: WriterOptions = {}): Writer {
  // A write into a file that is no longer at its path would be acknowledged and lost:
  // every operation checks before it starts, and a batch once more just before COMMIT.
  const requireFile = () => {
    const problem = options.fileProblem?.();
    if (problem) throw new StoreUnavailable(problem);
  };
  const projection = makeProjectionTable(db);
  const idempotency = makeIdempotencyWriter(db);
  let signing: ReceiptSigning | undefined;
  const events = makeEventWriter(db, projection, idempotency, requireFile, () => signing);
  const keys = makeKeyWriter(db);
  const logId = db.prepare('SELECT log_id FROM log_identity').pluck();
  // The readiness probe writes a row that needs new pages, and deletes it again.
  const grow = db.prepare('INSERT INTO service_health (id, padding) VALUES (1, zeroblob(16384))');
  const shrink = db.prepare('DELETE FROM service_health WHERE id = 1');
  const probe = db.transaction(() => {
    grow.run();
    shrink.run();
  });
  const since = db
    .prepare('SELECT seq, pet_id, version, type, data, recorded_at FROM events WHERE seq > ? ORDER BY seq')
    .safeIntegers(true)
    .raw();
  const swap = db.transaction((entries: Map<bigint, Entry>, after: number) => {
    let caughtUp = 0;
    for (const row of since.iterate(after) as IterableIterator<ReplayRow>) {
      const event = toAppliedEvent(row);
      entries.set(event.petId, applyEvent(entries.get(event.petId), event));
      caughtUp++;
    }
    const before = projection.list();
    projection.replaceAll(entries.values());
    return { caughtUp, before, entries };
  });
  const checked =
    <A extends unknown[], R>(run: (...args: A) => R) =>
    (...args: A): R => {
      requireFile();
      return run(...args);
    };
  return {
    appendBatch: checked((submissions: readonly Submission[], options?: BatchOptions) => events.appendBatch(submissions, options)),
    createKey: checked((name: string, createdBy: string, at: string, scope?: KeyScope) => keys.create(name, createdBy, at, scope)),
    createFirstKey: checked((name: string, createdBy: string, at: string) => keys.createFirst(name, createdBy, at)),
    revokeKey: checked((name: string, revokedBy: string, at: string) => keys.revoke(name, revokedBy, at)),
    probeWrite: checked(() => probe.immediate()),
    useSigningKey: checked((key: SigningKeyData, at: string, actor: string) => {
      const signer = makeSigner(key);
      const keyFile = key.file ?? 'the signing key';
      keys.startSigning({ keyId: signer.keyId, publicKey: signer.publicKey, data: '', keyFile, made: key.made === true }, at, actor);
      void signing?.close();
      signing = makeReceiptSigning(key, logId.get() as string, options.signingThread ? 'thread-sync' : 'in-place');
    }),
    addSigningKey: checked((entry: SigningKeyEntry, at: string, actor: string) => keys.addSigningKey(entry, at, actor)),
    retireSigningKey: checked((keyId: string, at: string, actor: string) => keys.retireSigningKey(keyId, at, actor)),
    expireIdempotency: checked((at: string, limit: number) => idempotency.expire(at, limit)),
    replaceProjection: checked((entries: Map<bigint, Entry>, after: number) => swap.immediate(entries, after)),
  };
}
