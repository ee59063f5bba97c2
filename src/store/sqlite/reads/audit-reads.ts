// The reads of the audit: the log's head, the signing keys, the key log whole, the guards
// that keep the logs append-only, and the stock adjustments a page at a time.
// Its methods are async without awaiting: this adapter implements an asynchronous port over
// a synchronous driver, and `async` turns a throw into a rejection, as the port promises.
/* eslint-disable @typescript-eslint/require-await */
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Db } from '../database.ts';
import { GENESIS_HASH } from '../../hash-chain.ts';
import { SIGNING_KEYS_SQL, signingKeyInfo } from '../../signing-keys.ts';
import type { AdjustmentMismatch, AdjustmentRow, AuditFilter, KeyHistory, LogHead, SigningKeyInfo } from '../../audit-reads.ts';
import type { KeyChainRow, KeyRecord } from '../../keys.ts';
import { makeFirstMismatch } from './adjustment-checks.ts';
import { makePageQuery } from './adjustment-pages.ts';
import type { ReplayRow } from '../../event-log.ts';
import { PAGE_ROWS, type Scans } from './scans.ts';

/** The triggers that keep the logs append-only and the keys chained. */
const GUARDS = [
  'api_key_events_no_delete',
  'api_key_events_no_update',
  'api_keys_created_chained',
  'api_keys_no_delete',
  'api_keys_revocation_only',
  'api_keys_revoked_chained',
  'events_chained',
  'events_no_delete',
  'events_no_update',
  'stock_adjustments_no_delete',
  'stock_adjustments_no_update',
  'tree_nodes_no_delete',
  'tree_nodes_no_update',
];

export interface AuditReader {
  keyHistory(): Promise<KeyHistory>;
  missingGuards(): Promise<string[]>;
  logHead(): LogHead;
  signingKeys(): SigningKeyInfo[];
  stockAdjustments(filter: AuditFilter): AsyncIterable<AdjustmentRow[]>;
  adjustmentMismatch(): Promise<AdjustmentMismatch | undefined>;
  petEvents(petId: bigint): Promise<ReplayRow[]>;
  firstSeqAfter(at: string): Promise<bigint | undefined>;
}

/** Both logs' heads in one statement: one snapshot of both. */
function makeLogHead(pointDb: Db): () => LogHead {
  const head = pointDb.prepare(
    `SELECT e.seq, e.hash, e.recorded_at AS recordedAt, k.seq AS keySeq, k.hash AS keyHash, i.log_id AS logId
     FROM log_identity AS i
     LEFT JOIN (SELECT seq, hash, recorded_at FROM events ORDER BY seq DESC LIMIT 1) AS e
     LEFT JOIN (SELECT seq, hash FROM api_key_events ORDER BY seq DESC LIMIT 1) AS k`,
  );
  return () => {
    const row = head.get() as {
      seq: number | null;
      hash: string | null;
      recordedAt: string | null;
      keySeq: number | null;
      keyHash: string | null;
      logId: string;
    };
    return {
      logId: row.logId,
      seq: row.seq ?? 0,
      hash: row.hash ?? GENESIS_HASH,
      recordedAt: row.recordedAt,
      keys: { seq: row.keySeq ?? 0, hash: row.keyHash ?? GENESIS_HASH },
    };
  };
}

/** The key log, the keys and their counters, in one read transaction on the scan connection. */
function makeKeyHistory(scanDb: Db, scans: Scans): () => Promise<KeyHistory> {
  const keyEvents = scanDb
    .prepare('SELECT seq, type, name, key_hash, recorded_at, actor, prev_hash, hash, data FROM api_key_events ORDER BY seq')
    .safeIntegers(true)
    .raw();
  const keyRows = scanDb.prepare(
    `SELECT name, hash, created_at AS createdAt, created_by AS createdBy, revoked_at AS revokedAt, revoked_by AS revokedBy
     FROM api_keys ORDER BY name`,
  );
  const counters = scanDb.prepare(
    `SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'events'), 0) AS events,
            coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'api_key_events'), 0) AS keys`,
  );
  return () =>
    scans.exclusive(async () => {
      scanDb.exec('BEGIN');
      try {
        return {
          events: keyEvents.all() as KeyChainRow[],
          keys: keyRows.all() as KeyRecord[],
          counters: counters.get() as KeyHistory['counters'],
        };
      } finally {
        scanDb.exec('COMMIT');
      }
    });
}

/** Page by page, each page its own short read: an audit piped into a slow pager holds no
 * read transaction while it waits, so checkpoints are never held back. */
function makeStockAdjustments(scanDb: Db, scans: Scans): AuditReader['stockAdjustments'] {
  const pageOf = makePageQuery(scanDb);
  return async function* (filter) {
    const query = await scans.exclusive(async () => pageOf(filter));
    for (let after: bigint = query.after; ;) {
      const page = await scans.exclusive(async () => query.page(after));
      if (page.length > 0) yield page;
      if (page.length < PAGE_ROWS) return;
      after = page[page.length - 1]!.seq as bigint;
      if (scans.yieldBetweenPages) await nextTurn();
    }
  };
}

export function makeAuditReader(pointDb: Db, scanDb: Db, scans: Scans): AuditReader {
  const signingKeys = pointDb.prepare(SIGNING_KEYS_SQL);
  const triggers = scanDb.prepare("SELECT name FROM sqlite_master WHERE type = 'trigger'").pluck();
  const firstMismatch = makeFirstMismatch(scanDb);
  const petEvents = pointDb
    .prepare('SELECT seq, pet_id, version, type, data, recorded_at FROM events WHERE pet_id = ? ORDER BY version')
    .safeIntegers(true)
    .raw();
  const firstSeqAfter = pointDb
    .prepare('SELECT min(seq) FROM events INDEXED BY events_by_time WHERE recorded_at > ?')
    .safeIntegers(true)
    .pluck();
  return {
    keyHistory: makeKeyHistory(scanDb, scans),
    missingGuards: () =>
      scans.exclusive(async () => {
        const present = new Set(triggers.all() as string[]);
        return GUARDS.filter((name) => !present.has(name));
      }),
    logHead: makeLogHead(pointDb),
    signingKeys: () => (signingKeys.all() as Parameters<typeof signingKeyInfo>[0][]).map(signingKeyInfo),
    stockAdjustments: makeStockAdjustments(scanDb, scans),
    adjustmentMismatch: () => scans.exclusive(async () => firstMismatch()),
    petEvents: async (petId) => petEvents.all(petId) as ReplayRow[],
    firstSeqAfter: async (at) => (firstSeqAfter.get(at) as bigint | null) ?? undefined,
  };
}
