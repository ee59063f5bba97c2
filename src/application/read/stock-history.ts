// Stock adjustments (by pet, actor and time window) a page at a time, for a reader that
// resumes where the last page ended (keyset paging by seq): the auditors' page draws a
// pet's history from these.
import type { AdjustmentRow, AuditFilter, AuditReads } from '../../store/audit-reads.ts';

/** What the history is read from: the store's audit reads, as the edge is given it. */
export type StockHistorySource = Pick<AuditReads, 'stockAdjustments'>;

export interface AdjustmentPage {
  rows: AdjustmentRow[];
  /** The seq to ask the next page after; undefined when this page is the last. */
  next?: bigint;
}

/** At most `limit` rows of the filter's adjustments after seq `after`, by seq. */
export async function stockAdjustmentPage(
  store: StockHistorySource,
  query: Omit<AuditFilter, 'after'> & { after: bigint; limit: number },
): Promise<AdjustmentPage> {
  const { limit, ...filter } = query;
  const rows: AdjustmentRow[] = [];
  // One row past the limit tells whether another page follows; leaving the loop ends the
  // store's read there.
  for await (const page of store.stockAdjustments(filter)) {
    rows.push(...page);
    if (rows.length > limit) break;
  }
  if (rows.length <= limit) return { rows };
  rows.length = limit;
  return { rows, next: BigInt(rows[rows.length - 1]!.seq as bigint | number) };
}
