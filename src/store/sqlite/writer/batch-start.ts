// What a batch is planned from, read inside its transaction: the chain's tip, the entries
// of its pets, the stored records of its keys and the tree's frontier (a handful of reads
// by key); and the key log's head, which its receipts' checkpoint names.
import type { Db } from '../database.ts';
import { batchPets, batchScopes, type BatchPlan, type PlanState } from '../../plan/batch-plan.ts';
import { GENESIS_HASH } from '../../hash-chain.ts';
import { scopeId, type IdempotencyRecord } from '../../idempotency.ts';
import type { Submission } from '../../event-log.ts';
import type { Entry } from '../../projection.ts';
import { makeEntryReader } from '../reads/entries.ts';
import type { IdempotencyWriter } from '../idempotency.ts';
import type { ProjectionTable } from '../projection.ts';
import type { BatchToSign } from '../../receipts/receipts.ts';
import { makeFrontierReader } from '../tree-frontier.ts';

interface BatchStart {
  /** The state the batch's submissions are planned against. */
  planState(submissions: readonly Submission[], signs: boolean): PlanState;
  /** What a plan's receipts sign. */
  toSign: (plan: BatchPlan) => BatchToSign;
}

export function makeBatchStart(db: Db, projection: ProjectionTable, idempotency: IdempotencyWriter): BatchStart {
  // The chain's tip: the newest event's hash, and the highest seq ever handed out
  // (sqlite_sequence remembers it even if the newest rows are gone).
  const newest = db.prepare('SELECT hash FROM events ORDER BY seq DESC LIMIT 1').pluck();
  const highestSeq = db.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'events'").pluck().safeIntegers(true);
  const currentEntry = makeEntryReader(db, projection);
  const keysHead = db.prepare('SELECT seq, hash FROM api_key_events ORDER BY seq DESC LIMIT 1');
  const frontierOf = makeFrontierReader(db);
  return {
    planState(submissions, signs) {
      const entries = new Map<bigint, Entry>();
      for (const petId of batchPets(submissions)) {
        const entry = currentEntry(petId);
        if (entry) entries.set(petId, entry);
      }
      const records = new Map<string, IdempotencyRecord>();
      for (const scope of batchScopes(submissions)) {
        const record = idempotency.stored(scope);
        if (record) records.set(scopeId(record), record);
      }
      const seq = (highestSeq.get() as bigint | undefined) ?? 0n;
      return {
        seq,
        hash: (newest.get() as string | undefined) ?? GENESIS_HASH,
        entries,
        records,
        frontier: frontierOf(Number(seq)),
        ...(signs ? { signs: true } : {}),
      };
    },
    toSign: (plan) => ({
      receipts: plan.receipts,
      tree: plan.tree,
      keys: (keysHead.get() as { seq: number; hash: string } | undefined) ?? { seq: 0, hash: GENESIS_HASH },
    }),
  };
}
