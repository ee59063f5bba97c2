// One pet's stock adjustments a page at a time, for a reader that resumes where the last
// page ended (keyset paging by seq): the auditors' page draws a pet's history from these.
import type { AdjustmentRow, AuditReads } from '../../store/audit-reads.ts';

/** What the history is read from: the store's audit reads, as the edge is given it. */
export type StockHistorySource = Pick<AuditReads, 'stockAdjustments'>;

export interface AdjustmentPage {
  rows: AdjustmentRow[];
  /** The seq to ask the next page after; undefined when this page is the last. */
  next?: bigint;
}

/** At most `limit` rows of the pet's adjustments after seq `after`, by seq. */
export async function stockAdjustmentPage(
  store: StockHistorySource,
  query: { pet: bigint; after: bigint; limit: number },
): Promise<AdjustmentPage> {
  const rows: AdjustmentRow[] = [];
  // One row past the limit tells whether another page follows; leaving the loop ends the
  // store's read there.
  for await (const page of store.stockAdjustments({ pet: query.pet, after: query.after })) {
    rows.push(...page);
    if (rows.length > query.limit) break;
  }
  if (rows.length <= query.limit) return { rows };
  rows.length = query.limit;
  return { rows, next: BigInt(rows[rows.length - 1]!.seq as bigint | number) };
}
