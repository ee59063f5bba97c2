// How a page of stock_adjustments is read on SQLite. Its planner has no statistics of the
// table, and for ORDER BY seq LIMIT it prefers to walk the table in seq order, filtering
// as it goes: right when the filter's rows come early, but a window near the end of the
// log made it read every row before the window, and a month of one pet every row of that
// pet. So a time window with a pet is read through (pet_id, recorded_at) and sorted; a
// window alone, when a capped count through the time index finds it small, through the
// time index and sorted. A larger window is read in seq order, from its smallest seq when
// the rows before the window outnumber the window's (the time index gives that seq, in a
// read as long as the window; the rows' times only guide the choice, never the answer).
// One actor's rows are chosen between its index and seq order the same way.
import type { AdjustmentRow, AuditFilter } from '../../audit-reads.ts';
import type { Db } from '../database.ts';
import { PAGE_ROWS } from './scans.ts';

/** Rows of a window up to which it is read through the time index and sorted. */
const SORTED_AT_MOST = 20_000;

// One fixed condition per audit filter; the values are bound, never spliced into the SQL.
const AUDIT_CONDITIONS = {
  pet: 'pet_id = @pet',
  actor: 'actor = @actor',
  since: 'recorded_at >= @since',
  until: 'recorded_at < @until',
} as const;

/** One page of stock_adjustments after seq @after, read as the plan says. */
const auditPage = (indexed: string, where: string) => `
SELECT seq, recorded_at, pet_id, previous_quantity, quantity, delta, actor, request_id
FROM stock_adjustments${indexed}
WHERE seq > @after${where}
ORDER BY seq
LIMIT ${PAGE_ROWS}`;

/** A filter's pages: where the first starts, and the page after any seq. */
export interface PageQuery {
  after: bigint;
  page: (after: bigint) => AdjustmentRow[];
}

/** The pages of each filter, read as its plan says (sortedAtMost: see SORTED_AT_MOST). */
export function makePageQuery(db: Db, sortedAtMost = SORTED_AT_MOST): (filter: AuditFilter) => PageQuery {
  const planOf = makePagePlan(db, sortedAtMost);
  return (filter) => {
    const given = (Object.keys(AUDIT_CONDITIONS) as (keyof typeof AUDIT_CONDITIONS)[]).filter((name) => filter[name] !== undefined);
    const where = given.map((name) => ` AND ${AUDIT_CONDITIONS[name]}`).join('');
    const plan = planOf(filter);
    const statement = db.prepare(auditPage(plan.indexed, where)).safeIntegers(true);
    const params = Object.fromEntries(given.map((name) => [name, filter[name]!]));
    return { after: plan.after, page: (after) => statement.all({ ...params, after }) as AdjustmentRow[] };
  };
}

/** The table walked by rowid, which SQLite still uses under NOT INDEXED. */
const IN_SEQ_ORDER = ' NOT INDEXED';

/** The INDEXED BY or NOT INDEXED clause ('' leaves the choice to SQLite) and the seq to read after. */
interface PagePlan {
  indexed: string;
  after: bigint;
}

type Window = { since?: string; until?: string };

function makePagePlan(db: Db, sortedAtMost: number): (filter: AuditFilter) => PagePlan {
  const byTime = 'FROM stock_adjustments INDEXED BY stock_adjustments_by_time';
  const conditions = {
    since: 'recorded_at >= @since',
    until: 'recorded_at < @until',
    both: 'recorded_at >= @since AND recorded_at < @until',
  };
  const each = (sql: (condition: string) => string) =>
    Object.fromEntries(Object.entries(conditions).map(([k, c]) => [k, db.prepare(sql(c)).pluck().safeIntegers(true)]));
  const counts = each((c) => `SELECT count(*) FROM (SELECT 1 ${byTime} WHERE ${c} LIMIT ${sortedAtMost})`);
  const smallest = each((c) => `SELECT min(seq) ${byTime} WHERE ${c}`);
  // The seq of the earliest row at or after a time: where, in seq order, that time is reached.
  const reached = db.prepare(`SELECT seq ${byTime} WHERE recorded_at >= ? ORDER BY recorded_at, seq LIMIT 1`).pluck().safeIntegers(true);
  const last = db.prepare('SELECT max(seq) FROM stock_adjustments').pluck().safeIntegers(true);
  const at = (time: string | undefined, otherwise: bigint): bigint =>
    time === undefined ? otherwise : ((reached.get(time) as bigint | null) ?? otherwise);

  /** The seq to read the window after: its smallest, when reading up to it in seq order would cost more than finding it. */
  const startOf = (window: Window, which: string, after: bigint): bigint => {
    const end = ((last.get() as bigint | null) ?? 0n) + 1n;
    const from = at(window.since, 1n);
    const before = from - after;
    if (before <= at(window.until, end) - from) return after;
    const first = smallest[which]!.get(window) as bigint | null;
    return first === null ? end : first - 1n > after ? first - 1n : after;
  };

  const byActor = 'FROM stock_adjustments INDEXED BY stock_adjustments_by_actor WHERE actor = ?';
  const actorCount = db.prepare(`SELECT count(*) FROM (SELECT 1 ${byActor} LIMIT ${sortedAtMost})`).pluck().safeIntegers(true);
  const actorEarliest = db.prepare(`SELECT seq ${byActor} ORDER BY recorded_at, seq LIMIT 1`).pluck().safeIntegers(true);
  const actorSmallest = db.prepare(`SELECT min(seq) ${byActor}`).pluck().safeIntegers(true);

  /** One actor's rows: few, through its index and sorted; many, in seq order, from its
   * smallest seq when its earliest row lies far past the page's start. */
  const actorPlan = (actor: string, after: bigint): PagePlan => {
    if ((actorCount.get(actor) as bigint) < BigInt(sortedAtMost)) return { indexed: ' INDEXED BY stock_adjustments_by_actor', after };
    if ((actorEarliest.get(actor) as bigint) - after <= BigInt(sortedAtMost)) return { indexed: IN_SEQ_ORDER, after };
    const first = actorSmallest.get(actor) as bigint;
    return { indexed: IN_SEQ_ORDER, after: first - 1n > after ? first - 1n : after };
  };

  const windowPlan = (window: Window, after: bigint): PagePlan => {
    const which = window.since === undefined ? 'until' : window.until === undefined ? 'since' : 'both';
    if ((counts[which]!.get(window) as bigint) < BigInt(sortedAtMost)) return { indexed: ' INDEXED BY stock_adjustments_by_time', after };
    return { indexed: IN_SEQ_ORDER, after: startOf(window, which, after) };
  };

  return (filter) => {
    const after = BigInt(filter.after ?? 0n);
    const window: Window = {
      ...(filter.since === undefined ? {} : { since: filter.since }),
      ...(filter.until === undefined ? {} : { until: filter.until }),
    };
    if (window.since === undefined && window.until === undefined)
      return filter.pet === undefined && filter.actor !== undefined ? actorPlan(filter.actor, after) : { indexed: '', after };
    if (filter.pet !== undefined) return { indexed: ' INDEXED BY stock_adjustments_by_pet_time', after };
    if (filter.actor !== undefined) return { indexed: ' INDEXED BY stock_adjustments_by_actor', after };
    return windowPlan(window, after);
  };
}
