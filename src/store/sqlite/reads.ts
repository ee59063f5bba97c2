// Everything that reads, on the calling thread. Two kinds of read:
// - point reads (an entry, a key by hash, PRAGMA data_version) go by index and take
//   microseconds. On the service's WAL reader connection they cannot wait for the write
//   lock: a WAL reader reads its snapshot of the file while another connection writes
//   (it waits only while a crashed writer's log is recovered, at opening).
// - scans (the whole projection, the log) are read a page at a time from one statement,
//   which holds one snapshot for its whole run. With `yieldBetweenPages` (the service)
//   the event loop gets a turn between pages, so 100,000 rows never stall it; scans then
//   need a connection of their own (`scanDb`), one at a time.
// Its methods are async without awaiting: this adapter implements an asynchronous port over
// a synchronous driver, and `async` turns a throw into a rejection, as the port promises.
/* eslint-disable @typescript-eslint/require-await */
import { nodeId } from '../batch-plan.ts';
import type { NodeKey } from '../../support/merkle.ts';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { makeChangeToken, type Db } from './database.ts';
import { GENESIS_HASH } from '../hash-chain.ts';
import { SIGNING_KEYS_SQL, signingKeyInfo } from '../signing-keys.ts';
import type { AdjustmentRow, AuditFilter, KeyHistory, LogHead, LogView, SigningKeyInfo } from '../audit-reads.ts';
import type { ChainRow, ReplayRow, SeqRange } from '../event-log.ts';
import type { KeyChainRow, KeyRecord } from '../keys.ts';
import type { Entry, InventoryRow } from '../projection.ts';
import { makeEntryReader } from './entries.ts';
import { makeIdempotencyReader, type IdempotencyTable } from './idempotency.ts';
import { makeKeyReader, type KeyReader } from './keys.ts';
import { makeProjectionTable } from './projection.ts';

const PAGE_ROWS = 256;

// One fixed condition per audit filter; the values are bound, never spliced into the SQL.
const AUDIT_CONDITIONS = {
  pet: 'e.pet_id = @pet',
  actor: 'e.actor = @actor',
  since: 'e.recorded_at >= @since',
  until: 'e.recorded_at < @until',
} as const;

/**
 * One page of the stock_adjustments view after seq @after, as a statement of its own:
 * the view's lag() window would be computed over the whole log for every page, so the
 * previous quantity is looked up by (pet_id, version) instead, which is what lag() over
 * the pet's PetTracked and QuantitySet events by version gives.
 */
const auditPage = (where: string) => `
SELECT seq, recorded_at, pet_id, previous_quantity, quantity, quantity - previous_quantity AS delta, actor, request_id
FROM (
  SELECT e.seq, e.recorded_at, e.pet_id, e.actor, e.request_id,
         json_extract(e.data, '$.quantity') AS quantity,
         (SELECT json_extract(p.data, '$.quantity') FROM events p
          WHERE p.pet_id = e.pet_id AND p.version < e.version AND p.type IN ('PetTracked', 'QuantitySet')
          ORDER BY p.version DESC LIMIT 1) AS previous_quantity
  FROM events e
  WHERE e.type = 'QuantitySet' AND e.seq > @after${where}
  ORDER BY e.seq
  LIMIT ${PAGE_ROWS}
)
ORDER BY seq`;

export interface Reader {
  loadEntries(petIds: readonly bigint[]): Map<bigint, Entry>;
  changeToken(): string;
  keys: KeyReader;
  idempotency: IdempotencyTable;
  ping(): void;
  /** The hash of the event at seq, undefined when there is none. */
  hashAt(seq: bigint): string | undefined;
  inventoryRows(): AsyncIterable<InventoryRow[]>;
  entries(): Promise<Entry[]>;
  lastSeq(): Promise<number>;
  replayRows(range?: SeqRange): AsyncIterable<ReplayRow[]>;
  chainRows(): AsyncIterable<ChainRow[]>;
  keyHistory(): Promise<KeyHistory>;
  missingGuards(): Promise<string[]>;
  logHead(): LogHead;
  signingKeys(): SigningKeyInfo[];
  treeNodes(keys: readonly NodeKey[]): Map<string, Buffer>;
  treeNodeCount(): number;
  eventsAfter(after: bigint, limit: number): ChainRow[];
  stockAdjustments(filter: AuditFilter): AsyncIterable<AdjustmentRow[]>;
  snapshot<T>(read: (view: LogView) => Promise<T>): Promise<T>;
}

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
  'tree_nodes_no_delete',
  'tree_nodes_no_update',
];

/** ownCommits: how many commits this process made through another connection (the
 * writer thread's), when it writes through one (makeChangeToken). */
export function makeReader(pointDb: Db, scanDb: Db, options: { yieldBetweenPages: boolean; ownCommits?: () => number }): Reader {
  const currentEntry = makeEntryReader(pointDb, makeProjectionTable(pointDb));
  const changes = makeChangeToken(pointDb, options.ownCommits);
  const ping = pointDb.prepare('SELECT 1').pluck();
  const hashAt = pointDb.prepare('SELECT hash FROM events WHERE seq = ?').pluck();
  const treeNode = pointDb.prepare('SELECT hash FROM tree_nodes WHERE level = ? AND idx = ?').pluck();
  const treeNodeCount = pointDb.prepare('SELECT count(*) FROM tree_nodes').pluck();
  const scanProjection = makeProjectionTable(scanDb);

  const inventory = scanDb.prepare('SELECT pet_id, quantity, status, version FROM inventory ORDER BY pet_id').safeIntegers(true).raw();
  const lastSeq = scanDb.prepare('SELECT coalesce(max(seq), 0) FROM events').pluck();
  const replay = scanDb
    .prepare('SELECT seq, pet_id, version, type, data, recorded_at FROM events WHERE seq > ? AND seq <= ? ORDER BY seq')
    .safeIntegers(true)
    .raw();
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
  const triggers = scanDb.prepare("SELECT name FROM sqlite_master WHERE type = 'trigger'").pluck();
  // One statement: one snapshot of both logs.
  const head = pointDb.prepare(
    `SELECT e.seq, e.hash, e.recorded_at AS recordedAt, k.seq AS keySeq, k.hash AS keyHash, i.log_id AS logId
     FROM log_identity AS i
     LEFT JOIN (SELECT seq, hash, recorded_at FROM events ORDER BY seq DESC LIMIT 1) AS e
     LEFT JOIN (SELECT seq, hash FROM api_key_events ORDER BY seq DESC LIMIT 1) AS k`,
  );
  const signingKeys = pointDb.prepare(SIGNING_KEYS_SQL);
  const chain = scanDb
    .prepare('SELECT seq, pet_id, version, type, data, actor, request_id, recorded_at, prev_hash, hash FROM events ORDER BY seq')
    .safeIntegers(true)
    .raw();

  // A feed page is short and goes by the primary key: a point read, never blocked by a scan.
  const eventsAfter = pointDb
    .prepare(
      'SELECT seq, pet_id, version, type, data, actor, request_id, recorded_at, prev_hash, hash FROM events WHERE seq > ? ORDER BY seq LIMIT ?',
    )
    .safeIntegers(true)
    .raw();

  // One scan at a time on scanDb: a statement being stepped keeps the connection busy.
  let tail: Promise<void> = Promise.resolve();
  const acquire = (): Promise<() => void> => {
    let release!: () => void;
    const done = new Promise<void>((resolve) => (release = resolve));
    const ready = tail.then(() => release);
    tail = tail.then(() => done);
    return ready;
  };
  const exclusive = async <T>(run: () => Promise<T>): Promise<T> => {
    const release = await acquire();
    try {
      return await run();
    } finally {
      release();
    }
  };

  async function* pages<T>(rows: IterableIterator<T>, map: (row: T) => T = (r) => r): AsyncIterable<T[]> {
    try {
      let page: T[] = [];
      for (const row of rows) {
        page.push(map(row));
        if (page.length === PAGE_ROWS) {
          yield page;
          page = [];
          if (options.yieldBetweenPages) await nextTurn();
        }
      }
      if (page.length > 0) yield page;
    } finally {
      rows.return?.();
    }
  }

  /** A scan that holds scanDb for its whole run; a consumer that stops early releases it. */
  async function* scan<T>(open: () => IterableIterator<T>, map?: (row: T) => T): AsyncIterable<T[]> {
    const release = await acquire();
    try {
      yield* pages(open(), map);
    } finally {
      release();
    }
  }

  const toInventoryRow = ([petId, quantity, status, version]: InventoryRow): InventoryRow => [
    petId,
    Number(quantity),
    status,
    Number(version),
  ];
  const replayRows = ({ after = 0, upTo = Number.MAX_SAFE_INTEGER }: SeqRange = {}) =>
    scan(() => replay.iterate(after, upTo) as IterableIterator<ReplayRow>);

  return {
    loadEntries(petIds) {
      const found = new Map<bigint, Entry>();
      for (const petId of petIds) {
        const entry = currentEntry(petId);
        if (entry) found.set(petId, entry);
      }
      return found;
    },
    changeToken: changes.current,
    keys: makeKeyReader(pointDb, changes),
    idempotency: makeIdempotencyReader(pointDb),
    ping: () => void ping.get(),
    hashAt: (seq) => hashAt.get(seq) as string | undefined,
    inventoryRows: () => scan(() => inventory.iterate() as IterableIterator<InventoryRow>, toInventoryRow),
    entries: () => exclusive(async () => scanProjection.list()),
    lastSeq: () => exclusive(async () => lastSeq.get() as number),
    replayRows,
    chainRows: () => scan(() => chain.iterate() as IterableIterator<ChainRow>),
    keyHistory: () =>
      exclusive(async () => {
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
      }),
    missingGuards: () =>
      exclusive(async () => {
        const present = new Set(triggers.all() as string[]);
        return GUARDS.filter((name) => !present.has(name));
      }),
    logHead() {
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
    },
    signingKeys: () => (signingKeys.all() as Parameters<typeof signingKeyInfo>[0][]).map(signingKeyInfo),
    treeNodeCount: () => treeNodeCount.get() as number,
    treeNodes(keys) {
      const found = new Map<string, Buffer>();
      for (const { level, index } of keys) {
        const hash = treeNode.get(level, index) as Buffer | undefined;
        if (hash) found.set(nodeId(level, index), hash);
      }
      return found;
    },
    eventsAfter: (after, limit) => eventsAfter.all(after, limit) as ChainRow[],
    // Page by page, each page its own short read: an audit piped into a slow pager
    // holds no read transaction while it waits, so checkpoints are never held back.
    async *stockAdjustments(filter) {
      const given = (Object.keys(AUDIT_CONDITIONS) as (keyof typeof AUDIT_CONDITIONS)[]).filter((name) => filter[name] !== undefined);
      const where = given.map((name) => ` AND ${AUDIT_CONDITIONS[name]}`).join('');
      const statement = scanDb.prepare(auditPage(where)).safeIntegers(true);
      const params = Object.fromEntries(given.map((name) => [name, filter[name]!]));
      for (let after: bigint | number = filter.after ?? 0; ;) {
        const page = await exclusive(async () => statement.all({ ...params, after }) as AdjustmentRow[]);
        if (page.length > 0) yield page;
        if (page.length < PAGE_ROWS) return;
        after = page[page.length - 1]!.seq as bigint;
        if (options.yieldBetweenPages) await nextTurn();
      }
    },
    snapshot(read) {
      // One read transaction: everything read sees the same state of the file.
      return exclusive(async () => {
        scanDb.exec('BEGIN');
        try {
          const view: LogView = {
            lastSeq: lastSeq.get() as number,
            replayRows: ({ after = 0, upTo = Number.MAX_SAFE_INTEGER }: SeqRange = {}) =>
              pages(replay.iterate(after, upTo) as IterableIterator<ReplayRow>),
            entries: async () => scanProjection.list(),
          };
          return await read(view);
        } finally {
          scanDb.exec('COMMIT');
        }
      });
    },
  };
}
