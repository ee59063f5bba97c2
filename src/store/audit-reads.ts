// The auditors' role of the storage port: what the read-only operator commands
// (verify-log, audit, stock-at, rebuild's check) read, each from one snapshot.
import type { SeqRange, ReplayRow } from './event-log.ts';
import type { KeyChainRow, KeyRecord } from './keys.ts';
import type { Entry } from './projection.ts';
import type { NodeKey } from '../support/merkle.ts';
import type { SigningKeyInfo } from './signing-keys.ts';

/** What verify-log checks beside the events, read from one snapshot. */
export interface KeyHistory {
  /** The key log by seq. */
  events: KeyChainRow[];
  /** The api_keys rows, which the key log must account for exactly. */
  keys: KeyRecord[];
  /** The highest seq each log ever handed out (sqlite_sequence, the chain heads): above
   * the newest row, the newest rows were cut off. */
  counters: { events: number; keys: number };
  /** The hashes PostgreSQL's chain heads (chain_head, key_chain_head) hold; SQLite keeps
   * none (its heads are the newest rows). */
  headHashes?: { events: string; keys: string };
}

/** The newest event and the newest key event: the digests an auditor keeps. */
export interface LogHead {
  /** The log's id (log_identity), which signed heads and receipts name. */
  logId: string;
  /** 0 and 64 zeros for an empty log. */
  seq: number;
  hash: string;
  /** The newest event's time; null for an empty log. */
  recordedAt: string | null;
  keys: { seq: number; hash: string };
}

export type { SigningKeyInfo };

/** A row of the stock_adjustments view, integers as BigInt. */
export type AdjustmentRow = Record<
  'seq' | 'recorded_at' | 'pet_id' | 'previous_quantity' | 'quantity' | 'delta' | 'actor' | 'request_id',
  bigint | number | string | null
>;

/** Where stock_adjustments departs from the events: how many rows differ, and the first
 * of them (by seq) as stored and as the events give it (either absent when it has none). */
export interface AdjustmentMismatch {
  count: number;
  stored?: AdjustmentRow;
  expected?: AdjustmentRow;
}

export interface AuditFilter {
  pet?: bigint;
  actor?: string;
  /** Inclusive, as recorded_at writes times. */
  since?: string;
  /** Exclusive. */
  until?: string;
  /** Only rows with a greater seq: where the previous page ended. */
  after?: bigint;
}

/** One consistent view of the log and the projection (a rebuild's --check reads it). */
export interface LogView {
  lastSeq: number;
  replayRows(range?: SeqRange): AsyncIterable<ReplayRow[]>;
  entries(): Promise<Entry[]>;
}

export interface AuditReads {
  /** The key log, the keys and the sequence counters, from one snapshot. */
  keyHistory(): Promise<KeyHistory>;
  /** The heads of the event log and of the key log, from one snapshot. */
  logHead(): Promise<LogHead>;
  /** The Merkle tree's stored nodes with these keys, by "level/index" (batch-plan.ts
   * nodeId); a node the tree lacks is missing from the map. */
  treeNodes(keys: readonly NodeKey[]): Promise<Map<string, Buffer>>;
  /** The stored nodes of one level from index from on, at most count, by index: one
   * range read (a tile). It ends before the first node the tree lacks. */
  treeRow(level: number, from: number, count: number): Promise<Buffer[]>;
  /** How many nodes the tree stores (verify-log: none past the log's events). */
  treeNodeCount(): Promise<number>;
  /** The signing keys the key log holds (SigningKeyAdded), by seq, with their retirement and endorsement. */
  signingKeys(): Promise<SigningKeyInfo[]>;
  /** Rows of stock_adjustments by seq. */
  stockAdjustments(filter: AuditFilter): AsyncIterable<AdjustmentRow[]>;
  /** One pet's events by seq, read through its (pet_id, version) index, as a replay reads them. */
  petEvents(petId: bigint): Promise<ReplayRow[]>;
  /** The smallest seq of the events recorded after `at` (as recorded_at writes times),
   * read through the time index; undefined when there is none. */
  firstSeqAfter(at: string): Promise<bigint | undefined>;
  /** The stock_adjustments rows that differ from the events', or undefined when none does. */
  adjustmentMismatch(): Promise<AdjustmentMismatch | undefined>;
  /** Runs read against one snapshot of the log and the projection. */
  snapshot<T>(read: (view: LogView) => Promise<T>): Promise<T>;
  /** The append-only and chaining triggers that are missing or disabled, by name. */
  missingGuards(): Promise<string[]>;
}
