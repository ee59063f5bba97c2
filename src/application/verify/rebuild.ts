// Replays the whole event log through the same applyEvent as the live write path,
// compares the result with the projection, and (unless only checking) swaps it in.
//
// Safe under load: the long part, replaying a snapshot of the log, holds no lock, so the
// service keeps writing. Then, holding the write lock only briefly, it replays the
// events appended meanwhile, writes a shadow table and swaps it in, in one transaction:
// no PATCH is lost or overwritten, and readers see the old projection until the commit.
import type { ReplayRow } from '../../store/event-log.ts';
import type { AuditReads } from '../../store/audit-reads.ts';
import { applyEvent, type Entry } from '../../domain/apply-event.ts';
import type { Projection } from '../../store/projection.ts';
import { toLoggedEvent } from '../../store/replay-rows.ts';

export interface Difference {
  petId: bigint;
  /** The projection's row; undefined when the projection lacks the entry. */
  before?: Entry;
  /** The replayed entry; undefined when no event makes this entry. */
  after?: Entry;
}

interface RebuildReport {
  eventsReplayed: number;
  /** Events that arrived while the snapshot was replayed, applied before the swap. */
  caughtUp: number;
  entries: number;
  /** The stock_adjustments rows that differed from the events' and were put right. */
  adjustments: number;
  differences: Difference[];
  /** False for --check: nothing was written. */
  written: boolean;
}

interface RebuildOptions {
  check: boolean;
  /** Called now and then during the replay with the events done and the total. */
  onProgress?: (done: number, total: number) => void;
}

const PROGRESS_EVERY = 50_000;

/** Folds pages of event rows, as the store reads them, into entries; returns how many it applied. */
export async function replayPages(
  pages: AsyncIterable<ReplayRow[]>,
  entries = new Map<bigint, Entry>(),
  onEach?: (n: number) => void,
): Promise<number> {
  let count = 0;
  for await (const rows of pages) {
    for (const row of rows) {
      const event = toLoggedEvent(row);
      entries.set(event.petId, applyEvent(entries.get(event.petId), event));
      if (++count % PROGRESS_EVERY === 0) onEach?.(count);
    }
  }
  return count;
}

/** The projection's columns that a difference can lie in, by the entry's field. */
const COLUMNS = { quantity: 'quantity', status: 'status', version: 'version', updatedAt: 'updated_at' } as const;

/** The columns (as the inventory table names them) in which two entries differ. */
export function differingColumns(a: Entry, b: Entry): string[] {
  return (Object.keys(COLUMNS) as (keyof typeof COLUMNS)[]).filter((field) => a[field] !== b[field]).map((field) => COLUMNS[field]);
}

/** An entry as the checks show it: its time only when it is where the difference lies. */
export function shownEntry(entry: Entry | undefined, other: Entry | undefined, statusLabel = ''): string {
  if (!entry) return 'no entry';
  const time = other && entry.updatedAt !== other.updatedAt ? `, updated_at ${entry.updatedAt}` : '';
  return `quantity ${entry.quantity}, ${statusLabel}${entry.status}, version ${entry.version}${time}`;
}

function same(a: Entry, b: Entry): boolean {
  return differingColumns(a, b).length === 0;
}

export function compare(current: Entry[], replayed: Map<bigint, Entry>): Difference[] {
  const differences: Difference[] = [];
  const seen = new Set<bigint>();
  for (const before of current) {
    seen.add(before.petId);
    const after = replayed.get(before.petId);
    if (!after) differences.push({ petId: before.petId, before });
    else if (!same(before, after)) differences.push({ petId: before.petId, before, after });
  }
  for (const [petId, after] of replayed) if (!seen.has(petId)) differences.push({ petId, after });
  return differences.sort((a, b) => (a.petId < b.petId ? -1 : a.petId > b.petId ? 1 : 0));
}

export async function rebuildProjection(
  store: Pick<AuditReads, 'snapshot'> & Pick<Projection, 'replaceProjection'>,
  options: RebuildOptions,
): Promise<RebuildReport> {
  const entries = new Map<bigint, Entry>();

  // One snapshot: the replay and (for --check) the comparison see the same state.
  const { upTo, count, differences } = await store.snapshot(async (view) => {
    const upTo = view.lastSeq;
    const progress = options.onProgress && ((n: number) => options.onProgress!(n, upTo));
    const count = await replayPages(view.replayRows({ upTo }), entries, progress);
    options.onProgress?.(count, count);
    return { upTo, count, differences: options.check ? compare(await view.entries(), entries) : [] };
  });
  if (options.check) return { eventsReplayed: count, caughtUp: 0, entries: entries.size, adjustments: 0, differences, written: false };

  // Holding the write lock: the events appended since the snapshot, then the swap.
  const swapped = await store.replaceProjection(entries, upTo);
  return {
    eventsReplayed: count + swapped.caughtUp,
    caughtUp: swapped.caughtUp,
    entries: swapped.entries.size,
    adjustments: swapped.adjustments,
    differences: compare(swapped.before, swapped.entries),
    written: true,
  };
}
