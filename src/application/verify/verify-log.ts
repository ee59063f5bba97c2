// Recomputes the hash chain over the whole event log, in seq order. It finds the first
// event whose content or link does not match (an edit, a removal, a reordering), a gap
// in seq or a sequence counter above the newest event (every seq is committed in order,
// so either is a removal), and, given digests saved earlier, proves that today's log
// still extends them: rewriting history before that point, even with the chain
// recomputed, or cutting the log short of it, changes or loses the event a digest names.
// The key log (api_key_events) is checked the same way, against its own chain and
// digests, and must account exactly for the api_keys table: a key deleted, recreated
// or back-dated no longer matches its events. What the chain cannot show is checked
// too: each entry's versions run 1, 2, 3, …; each event's actor was a key of the key
// log, not revoked, at the event's time, and one that writes events of that type;
// PostgreSQL's chain heads are at the newest rows. verifyServedState adds what the
// service serves and what guards the tables.
import { ACTOR_TIME_MARGIN_MS, actorProblem, keyLifetimes } from './actor-checks.ts';
import { chainWalk, digestsOf, type ChainBreak } from './chain-walk.ts';
import { keyLogGoesBack, verifyKeys } from './key-log-check.ts';
import { unvouchedKeys } from '../signing/key-standing.ts';
import { differingColumns, rebuildProjection, shownEntry } from './rebuild.ts';
import { treeCheck } from './tree-check.ts';
import type { AdjustmentRow, AuditReads, KeyHistory } from '../../store/audit-reads.ts';
import type { ChainRow, EventLog } from '../../store/event-log.ts';
import { eventHash, type Digest } from '../../store/hash-chain.ts';
import type { Projection } from '../../store/projection.ts';

export type Verdict =
  | { ok: true; events: number; head: Digest; keyEvents: number; keyHead: Digest; warnings?: string[] }
  /** seq: the first broken event's (of the key log when chain is 'keys'). */
  | { ok: false; events: number; seq: number; reason: string; chain?: 'keys' };

type Broken = Extract<Verdict, { ok: false }>;

/** The rows of pages, one at a time. */
async function* each(pages: AsyncIterable<ChainRow[]>): AsyncIterable<ChainRow> {
  for await (const page of pages) yield* page;
}

/** Something the walk noticed that is no break: how often, and the first time. */
interface Noticed<T> {
  first?: T;
  count: number;
}

function notice<T>(noticed: Noticed<T>, what: T): void {
  noticed.first ??= what;
  noticed.count++;
}

/** Why an event's version does not follow its entry's newest so far, or undefined after noting it. */
function versionProblem(
  versions: Map<string, number>,
  petId: bigint | number | string,
  version: bigint | number | string,
): string | undefined {
  const pet = String(petId);
  const before = versions.get(pet) ?? 0;
  if (Number(version) !== before + 1) {
    return `entry ${pet} has version ${version} after ${before === 0 ? 'none' : `version ${before}`}: an entry's versions are 1, 2, 3, …, so events of it were removed or made outside the service`;
  }
  versions.set(pet, before + 1);
  return undefined;
}

/** The event log read to its end: its head and what it noticed, or where it broke. */
type EventsRead =
  | { broken: ChainBreak; events: number }
  | {
      broken?: undefined;
      events: number;
      head: Digest;
      clockBack: Noticed<{ seq: number; at: string; after: string }>;
      nearActor: Noticed<ChainBreak>;
    };

/** The events against their chain, their digests, the Merkle tree, their entries'
 * versions and their actors' key lifetimes. */
async function readEvents(
  store: Pick<EventLog, 'chainRows'> & Pick<AuditReads, 'treeNodes' | 'treeNodeCount'>,
  wanted: Map<number, string>,
  history: KeyHistory,
): Promise<EventsRead> {
  const lifetimes = keyLifetimes(history);
  const walk = chainWalk('event', wanted);
  const tree = treeCheck(store);
  // The newest version of each entry so far (by petId's decimal text).
  const versions = new Map<string, number>();
  let latest = '';
  const clockBack: Noticed<{ seq: number; at: string; after: string }> = { count: 0 };
  // Events within the margin of their actor's revocation or creation.
  const nearActor: Noticed<ChainBreak> = { count: 0 };
  let events = 0;
  for await (const [seq, petId, version, type, data, actor, requestId, recordedAt, prevHash, hash] of each(store.chainRows())) {
    events++;
    const at = Number(seq);
    const expected = eventHash({ prevHash: prevHash ?? '', seq, petId, version, type, data, actor, requestId, recordedAt });
    const broken = walk.step(at, prevHash, hash, expected) ?? (await tree.add(hash));
    if (broken) return { broken, events };
    const wrongVersion = versionProblem(versions, petId, version);
    if (wrongVersion) return { broken: { seq: at, reason: wrongVersion }, events };
    const problem = actorProblem(actor, type, recordedAt, lifetimes);
    if (problem && 'broken' in problem) return { broken: { seq: at, reason: problem.broken }, events };
    if (problem) notice(nearActor, { seq: at, reason: problem.warning });
    if (recordedAt < latest) notice(clockBack, { seq: at, at: recordedAt, after: latest });
    else latest = recordedAt;
  }
  const broken = walk.end(history.counters.events) ?? (await tree.end());
  if (broken) return { broken, events };
  return { events, head: walk.head, clockBack, nearActor };
}

/** Where PostgreSQL's chain heads are not at the newest rows; undefined when they are (or the store keeps none). */
function headsProblem(history: KeyHistory, head: Digest, keyHead: Digest): (ChainBreak & { chain?: 'keys' }) | undefined {
  if (!history.headHashes) return undefined;
  // Both fields: a head moved back with its hash kept would make the next append reuse a seq.
  if (history.counters.events !== head.seq || history.headHashes.events !== head.hash) {
    return {
      seq: head.seq,
      reason: `chain_head (seq ${history.counters.events}) is not at the newest event (seq ${head.seq}): its seq or hash is not that event's, so rows were added past the chain's head or the head was moved`,
    };
  }
  if (history.counters.keys !== keyHead.seq || history.headHashes.keys !== keyHead.hash) {
    return {
      seq: keyHead.seq,
      reason: `key_chain_head (seq ${history.counters.keys}) is not at the newest key event (seq ${keyHead.seq})`,
      chain: 'keys',
    };
  }
  return undefined;
}

/** What a sound log's verdict warns of: clocks set back, events near their actor's revocation or creation. */
function warningsOf(read: Extract<EventsRead, { head: Digest }>, keyClockBack: string | undefined): string[] {
  const { clockBack, nearActor } = read;
  const margin = ACTOR_TIME_MARGIN_MS / 1000;
  return [
    ...(clockBack.first
      ? [
          `recorded_at goes back in time ${clockBack.count === 1 ? 'once' : `${clockBack.count} times`}, first at seq ${clockBack.first.seq} ` +
            `(${clockBack.first.at}, after ${clockBack.first.after}): a clock set back, or events made outside the service`,
        ]
      : []),
    ...(keyClockBack ? [keyClockBack] : []),
    ...(nearActor.first
      ? [
          `${nearActor.count === 1 ? 'an event' : `${nearActor.count} events`} within ${margin} s of ` +
            `${nearActor.count === 1 ? 'its' : 'their'} actor's revocation or creation, first seq ${nearActor.first.seq}: ${nearActor.first.reason} ` +
            `(a request authenticated before a revocation, or clocks apart; beyond ${margin} s it is BROKEN)`,
        ]
      : []),
  ];
}

export async function verifyLog(
  store: Pick<EventLog, 'chainRows'> & Pick<AuditReads, 'keyHistory' | 'treeNodes' | 'treeNodeCount' | 'logHead' | 'signingKeys'>,
  digest?: Digest | readonly Digest[],
): Promise<Verdict> {
  const digests = digest === undefined ? [] : Array.isArray(digest) ? (digest as readonly Digest[]) : [digest as Digest];
  const wanted = digestsOf(digests, undefined);
  if (typeof wanted === 'string') return { ok: false, events: 0, seq: 0, reason: wanted };
  const wantedKeys = digestsOf(digests, 'keys');
  if (typeof wantedKeys === 'string') return { ok: false, events: 0, seq: 0, reason: wantedKeys, chain: 'keys' };
  // Read before the events: a counter read first is never above events appended since.
  const history = await store.keyHistory();
  // The key log first: the events' actors are checked against it.
  const keys = verifyKeys(history, wantedKeys);
  if ('reason' in keys) return { ok: false, events: 0, ...keys, chain: 'keys' };
  const [unvouched] = unvouchedKeys(await store.signingKeys(), (await store.logHead()).logId);
  if (unvouched) {
    const added = history.events.find(([, type, name]) => type === 'SigningKeyAdded' && name === unvouched.keyId);
    return { ok: false, events: 0, seq: Number(added?.[0] ?? 0), reason: unvouched.reason, chain: 'keys' };
  }
  const read = await readEvents(store, wanted, history);
  if (read.broken) return { ok: false, events: read.events, ...read.broken };
  const heads = headsProblem(history, read.head, keys);
  if (heads) return { ok: false, events: read.events, ...heads };
  const warnings = warningsOf(read, keyLogGoesBack(history));
  return {
    ok: true,
    events: read.events,
    head: read.head,
    keyEvents: history.events.length,
    keyHead: { ...keys, chain: 'keys' },
    ...(warnings.length > 0 ? { warnings } : {}),
  };
}

/** A stock_adjustments row as the checks show it. */
function shownAdjustment(row: AdjustmentRow | undefined): string {
  if (!row) return 'no row';
  return `pet ${row.pet_id}, ${row.previous_quantity} -> ${row.quantity} (delta ${row.delta}), actor ${row.actor}, request ${row.request_id}, at ${row.recorded_at}`;
}

/** Why stock_adjustments is not what the events give, or undefined when it is. */
async function adjustmentsProblem(store: Pick<AuditReads, 'adjustmentMismatch'>): Promise<string | undefined> {
  const mismatch = await store.adjustmentMismatch();
  if (!mismatch) return undefined;
  const { count, stored, expected } = mismatch;
  const seq = String((stored ?? expected)!.seq);
  return (
    `stock_adjustments differs from the events in ${count} ${count === 1 ? 'row' : 'rows'}: ` +
    `seq ${seq} has ${shownAdjustment(stored)} where the events give ${shownAdjustment(expected)} ` +
    `(scripts/rebuild-projection puts the table right)`
  );
}

/**
 * What the chains cannot show: that the projection the service serves is the replay of
 * the log (an edited inventory row makes GET lie), that stock_adjustments holds the rows
 * the events give (an edited row makes the auditors' answers lie), and that the triggers
 * guarding the tables are all there. Undefined when all hold; otherwise why not.
 */
export async function verifyServedState(
  store: Pick<AuditReads, 'snapshot' | 'missingGuards' | 'adjustmentMismatch'> & Pick<Projection, 'replaceProjection'>,
): Promise<string | undefined> {
  const missing = await store.missingGuards();
  if (missing.length > 0) {
    return `the append-only trigger${missing.length === 1 ? '' : 's'} ${missing.join(', ')} ${missing.length === 1 ? 'is' : 'are'} missing or disabled: the tables were left open to edits`;
  }
  const { differences } = await rebuildProjection(store, { check: true });
  if (differences.length === 0) return adjustmentsProblem(store);
  const { petId, before, after } = differences[0]!;
  const differing = before && after ? differingColumns(before, after) : [];
  const columns = differing.length > 0 ? ` (${differing.join(', ')} ${differing.length === 1 ? 'differs' : 'differ'})` : '';
  return (
    `the projection (inventory) differs from the replay of the log in ${differences.length} ${differences.length === 1 ? 'entry' : 'entries'}: ` +
    `entry ${petId} has ${shownEntry(before, after, 'status ')} where the log gives ${shownEntry(after, before, 'status ')}${columns} (scripts/rebuild-projection --check lists them)`
  );
}

/** How the command names where a verdict broke: `seq N` or `key seq N`. */
export function brokenAt(verdict: Broken): string {
  return `${verdict.chain === 'keys' ? 'key seq' : 'seq'} ${verdict.seq}`;
}
