// The reads of the event log and its tree: by seq (a hash, a feed page, tree nodes: point
// reads by key on the point connection, never blocked by a scan) and whole (replay, the
// chain, a snapshot: scans on the scan connection).
// Its methods are async without awaiting: this adapter implements an asynchronous port over
// a synchronous driver, and `async` turns a throw into a rejection, as the port promises.
/* eslint-disable @typescript-eslint/require-await */
import { nodeId } from '../../plan/batch-plan.ts';
import type { NodeKey } from '../../../support/merkle.ts';
import type { Db } from '../database.ts';
import type { LogView } from '../../audit-reads.ts';
import type { ChainRow, ReplayRow, SeqRange } from '../../event-log.ts';
import type { ProjectionTable } from '../projection.ts';
import { contiguous } from '../../tree-rows.ts';
import type { Scans } from './scans.ts';

export interface LogReader {
  /** The hash of the event at seq, undefined when there is none. */
  hashAt(seq: bigint): string | undefined;
  lastSeq(): Promise<number>;
  replayRows(range?: SeqRange): AsyncIterable<ReplayRow[]>;
  chainRows(): AsyncIterable<ChainRow[]>;
  treeNodes(keys: readonly NodeKey[]): Map<string, Buffer>;
  treeNodeCount(): number;
  treeRow(level: number, from: number, count: number): Buffer[];
  eventsAfter(after: bigint, limit: number): ChainRow[];
  snapshot<T>(read: (view: LogView) => Promise<T>): Promise<T>;
}

/** The tree's nodes by key, a level's nodes by index range, and how many there are: point reads. */
function makeTreeReads(pointDb: Db): Pick<LogReader, 'treeNodes' | 'treeNodeCount' | 'treeRow'> {
  const treeNode = pointDb.prepare('SELECT hash FROM tree_nodes WHERE level = ? AND idx = ?').pluck();
  const treeNodeCount = pointDb.prepare('SELECT count(*) FROM tree_nodes').pluck();
  const treeRow = pointDb.prepare('SELECT idx, hash FROM tree_nodes WHERE level = ? AND idx >= ? AND idx < ? ORDER BY idx').raw();
  return {
    treeNodeCount: () => treeNodeCount.get() as number,
    treeRow(level, from, count) {
      const rows = treeRow.all(level, from, from + count) as [number, Buffer][];
      return contiguous(rows, from);
    },
    treeNodes(keys) {
      const found = new Map<string, Buffer>();
      for (const { level, index } of keys) {
        const hash = treeNode.get(level, index) as Buffer | undefined;
        if (hash) found.set(nodeId(level, index), hash);
      }
      return found;
    },
  };
}

/** scanProjection: the projection table on the scan connection, which a snapshot lists. */
export function makeLogReader(pointDb: Db, scanDb: Db, scans: Scans, scanProjection: ProjectionTable): LogReader {
  const hashAt = pointDb.prepare('SELECT hash FROM events WHERE seq = ?').pluck();
  const lastSeq = scanDb.prepare('SELECT coalesce(max(seq), 0) FROM events').pluck();
  const replay = scanDb
    .prepare('SELECT seq, pet_id, version, type, data, recorded_at FROM events WHERE seq > ? AND seq <= ? ORDER BY seq')
    .safeIntegers(true)
    .raw();
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
  const replayed = (after: number | bigint, upTo: number | bigint) => replay.iterate(after, upTo) as IterableIterator<ReplayRow>;

  return {
    hashAt: (seq) => hashAt.get(seq) as string | undefined,
    lastSeq: () => scans.exclusive(async () => lastSeq.get() as number),
    replayRows: ({ after = 0, upTo = Number.MAX_SAFE_INTEGER }: SeqRange = {}) => scans.scan(() => replayed(after, upTo)),
    chainRows: () => scans.scan(() => chain.iterate() as IterableIterator<ChainRow>),
    ...makeTreeReads(pointDb),
    eventsAfter: (after, limit) => eventsAfter.all(after, limit) as ChainRow[],
    snapshot(read) {
      // One read transaction: everything read sees the same state of the file.
      return scans.exclusive(async () => {
        scanDb.exec('BEGIN');
        try {
          const view: LogView = {
            lastSeq: lastSeq.get() as number,
            replayRows: ({ after = 0, upTo = Number.MAX_SAFE_INTEGER }: SeqRange = {}) => scans.pages(replayed(after, upTo)),
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
