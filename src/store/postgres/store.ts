// The PostgreSQL adapter of the storage port (port.ts), on node-postgres with a pool: for
// any number of stateless service instances, on any number of hosts, sharing one
// database. Appends are serialized across instances by the chain head's row lock
// (append-batch.ts); each instance's GET cache follows the others' commits through
// LISTEN/NOTIFY (changes.ts). Nothing here blocks the event loop: every wait is on the
// server, bounded by lock and query timeouts.
import type pg from 'pg';
import type { InventoryStore, OpenOptions } from '../port.ts';
import type { Entry } from '../projection.ts';
import { appendBatch } from './write/append-batch.ts';
import { beginLocked } from './write/chain-head.ts';
import { CHANGES_CHANNEL, watchChanges, type ChangeWatch } from './changes.ts';
import { makePool, redactUrl } from './connection.ts';
import { inTransaction, readBy } from './transactions.ts';
import { loadEntries } from './entries.ts';
import { postgresFault } from './faults.ts';
import { makeIdempotency } from './write/idempotency.ts';
import { appendHistory, importHistory } from './write/import.ts';
import { watchRetirement } from '../retired-key.ts';
import { keyRecords, makeKeys } from './keys.ts';
import { makeSigningKeyLog, startSigning } from './write/signing-key-log.ts';
import { makeSigner, SIGNING_ACTOR } from '../../support/signing.ts';
import { keyAtStart } from '../signing-keys.ts';
import { makeReceiptSigning, type ReceiptSigning } from '../receipts/receipts.ts';
import { swapProjection } from './projection.ts';
import { chainRows, eventsAfter, inventoryRows, replayPages, snapshot } from './reads.ts';
import { firstSeqAfter, petEvents, stockAdjustments } from './stock-adjustments.ts';
import { adjustmentMismatch } from './adjustment-checks.ts';
import { commitOutcome, diagnostics, probeWrite } from './store-health.ts';
import { keyHistory, logHead, missingGuards, signingKeys, treeNodeCount, treeNodes, treeRow } from './verifiable-log-reads.ts';
import { migratePostgres, requireCurrentPostgresSchema } from './schema.ts';

/** How long a rebuild waits for the chain head (writers finish their batch first). */
const REBUILD_LOCK_WAIT_MS = 30_000;

interface PostgresOpenOptions extends Pick<OpenOptions, 'readonly' | 'mustExist' | 'auditing' | 'onMigrated' | 'signingKey'> {
  now?: () => number;
  /** Opened by the service: every session bounded to fit a request's budget (connection.ts). */
  service?: boolean;
  /** Follows other processes' commits on a LISTEN connection of its own (changes.ts); true unless told not. */
  listen?: boolean;
  /** Sees the pool (tests check from it that no transaction is left open). */
  inspectPool?: (pool: pg.Pool) => void;
}

/** The pool, once the schema is found current (or made so, unless the store must exist). */
async function openPool(url: string, options: PostgresOpenOptions): Promise<pg.Pool> {
  const name = redactUrl(url);
  const pool = makePool(url, { readonly: options.readonly, service: options.service });
  options.inspectPool?.(pool);
  try {
    if (options.readonly || options.mustExist)
      await requireCurrentPostgresSchema(pool, name, url, undefined, options.readonly === true && options.auditing === true);
    else {
      const applied = await migratePostgres(pool, name);
      options.onMigrated?.(applied);
    }
  } catch (error) {
    await pool.end();
    throw error;
  }
  return pool;
}

/** The receipts' signing, once the key log lists the instance's key (startSigning). */
async function startReceipts(
  pool: pg.Pool,
  signingKey: NonNullable<OpenOptions['signingKey']>,
  now: () => number,
): Promise<ReceiptSigning> {
  try {
    await startSigning(pool, keyAtStart(signingKey), new Date(now()).toISOString(), SIGNING_ACTOR);
    const { rows } = await pool.query<{ log_id: string }>('SELECT log_id FROM log_identity');
    const logId = rows[0]!.log_id;
    return makeReceiptSigning(signingKey, logId, 'thread-async');
  } catch (error) {
    await pool.end();
    throw error;
  }
}

/** rebuild-projection's swap, told to every instance as a change. */
async function replaceProjection(pool: pg.Pool, watch: ChangeWatch, entries: Map<bigint, Entry>, after: number) {
  let changes = 0n;
  const result = await swapProjection(
    {
      pool,
      beginLocked: beginLocked(REBUILD_LOCK_WAIT_MS),
      async announce(client) {
        const { rows } = await client.query<{ changes: bigint }>(
          `UPDATE chain_head SET changes = changes + 1 RETURNING changes, pg_notify('${CHANGES_CHANNEL}', changes::text)`,
        );
        changes = rows[0]!.changes;
      },
    },
    entries,
    after,
  );
  watch.saw(changes);
  return result;
}

export async function openPostgresStore(url: string, options: PostgresOpenOptions = {}): Promise<InventoryStore> {
  const now = options.now ?? Date.now;
  const pool = await openPool(url, options);
  const signing = options.signingKey ? await startReceipts(pool, options.signingKey, now) : undefined;
  const watch = watchChanges(url, pool, options.listen ?? true);
  const store: InventoryStore = {
    loadEntries: (petIds, read = {}) =>
      read.waitUntil === undefined ? loadEntries(pool, petIds) : readBy(pool, read.waitUntil, (client) => loadEntries(client, petIds)),
    commitOutcome: (batch) => commitOutcome(pool, batch),
    appendBatch: (submissions, batchOptions = {}) => appendBatch(pool, submissions, batchOptions, (changes) => watch.saw(changes), signing),
    changeToken: () => watch.token(),
    changeTokenNow: () => watch.tokenNow(),
    inventoryRows: () => inventoryRows(pool),
    replayRows: (range) => replayPages(pool, range),
    chainRows: () => chainRows(pool),
    keyHistory: () => keyHistory(pool),
    missingGuards: () => missingGuards(pool),
    logHead: () => logHead(pool),
    signingKeys: () => signingKeys(pool),
    treeNodes: (keys) => treeNodes(pool, keys),
    treeNodeCount: () => treeNodeCount(pool),
    treeRow: (level, from, count) => treeRow(pool, level, from, count),
    eventsAfter: (after, limit) => eventsAfter(pool, after, limit),
    stockAdjustments: (filter) => stockAdjustments(pool, filter),
    adjustmentMismatch: () => adjustmentMismatch(pool),
    petEvents: (petId) => petEvents(pool, petId),
    firstSeqAfter: (at) => firstSeqAfter(pool, at),
    snapshot: (read) => snapshot(pool, read),
    replaceProjection: (entries, after) => replaceProjection(pool, watch, entries, after),
    keys: makeKeys(pool, now, watch),
    idempotency: makeIdempotency(pool),
    keyRecords: () => keyRecords(pool),
    ...makeSigningKeyLog(pool, now),
    importHistory: (history) => inTransaction(pool, beginLocked(REBUILD_LOCK_WAIT_MS), (client) => importHistory(client, history)),
    appendHistory: (events) => inTransaction(pool, beginLocked(REBUILD_LOCK_WAIT_MS), (client) => appendHistory(client, events)),
    async ping() {
      await pool.query('SELECT 1');
    },
    probeWrite: () => probeWrite(pool),
    unavailable: () => undefined,
    diagnostics: () => diagnostics(pool, watch),
    fault: postgresFault,
    async close() {
      await watch.close();
      await pool.end();
      await signing?.close();
    },
  };
  // Its writes refused once the instance's key is retired.
  return options.signingKey ? watchRetirement(store, makeSigner(options.signingKey).keyId) : store;
}
