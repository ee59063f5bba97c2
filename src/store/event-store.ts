// The event log. Only this module speaks SQL to the `events` table. An append reads the
// entry, lets the caller decide, inserts the events (each chained to the one before by
// its hash) and applies them to the projection, all in one transaction: the log and
// the projection never disagree.
// Appends are group-committed: those submitted within one turn of the event loop share
// one transaction and one sync to disk (group-commit.ts); the Promise settles after the
// commit.
import type Database from 'better-sqlite3';
import { decodeEvent, encodeData } from '../domain/codec.ts';
import type { AppliedEvent, DomainEvent, EntryState, EventMeta, RecordedEvent } from '../domain/events.ts';
import { groupCommit, type GroupCommitHooks } from './group-commit.ts';
import { eventHash, GENESIS_HASH, type Digest } from './hash-chain.ts';
import { applyEvent, type Entry, type Projection } from './projection.ts';

export interface AppendRequest {
  petId: bigint;
  decide: (state: EntryState | undefined) => DomainEvent[];
}

export interface Appended {
  entry: Entry;
  events: RecordedEvent[];
}

export interface SeqRange {
  after?: number;
  upTo?: number;
}

export interface EventStore {
  append(request: AppendRequest, meta: EventMeta): Promise<Appended>;
  /** All requests or none: the first throw leaves nothing of them behind. */
  appendAll(requests: AppendRequest[], meta: EventMeta): Promise<Appended[]>;
  /** The events with after < seq <= upTo (default: all), by sequence number, for a replay. */
  replayEvents(range?: SeqRange): IterableIterator<AppliedEvent>;
  /** The same rows as replayEvents, undecoded: what a replay must at least read. */
  replayRows(range?: SeqRange): IterableIterator<ReplayRow>;
  /** The sequence number of the newest event, 0 for an empty log. */
  lastSeq(): number;
}

/** An event row as a replay reads it (raw mode, integers as BigInt). */
export type ReplayRow = [seq: bigint, petId: bigint, version: bigint, type: string, data: string, recordedAt: string];

// A replay reads only what applying an event needs (not actor and request_id): at a
// million events, every column read is a measurable share of a rebuild.
const REPLAY_COLUMNS = 'seq, pet_id, version, type, data, recorded_at';
// Rows are read a page at a time by seq (keyset pagination): as fast as one cursor, and
// no statement stays open between pages.
const PAGE_SIZE = 8192;

export function toAppliedEvent([seq, petId, version, type, data, recordedAt]: ReplayRow): AppliedEvent {
  const event = decodeEvent(type, data);
  // Built field by field, not spread: one object shape for every event type keeps a
  // replay of millions of events fast.
  return { type: event.type, data: event.data, seq: Number(seq), petId, version: Number(version), recordedAt } as AppliedEvent;
}

export function makeEventStore(
  db: Database.Database,
  deps: { projection: Projection; now: () => number } & GroupCommitHooks,
): EventStore {
  const { projection, now } = deps;
  const insert = db.prepare(
    `INSERT INTO events (seq, pet_id, version, type, data, actor, request_id, recorded_at, prev_hash, hash)
     VALUES (@seq, @petId, @version, @type, @data, @actor, @requestId, @recordedAt, @prevHash, @hash)`,
  );
  // The chain's tip: the newest event's hash, and the highest seq ever handed out
  // (sqlite_sequence remembers it even if the newest rows are gone).
  const newest = db.prepare('SELECT hash FROM events ORDER BY seq DESC LIMIT 1').pluck();
  const highestSeq = db.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'events'").pluck();
  const page = db
    .prepare(`SELECT ${REPLAY_COLUMNS} FROM events WHERE seq > ? AND seq <= ? ORDER BY seq LIMIT ${PAGE_SIZE}`)
    .safeIntegers(true)
    .raw();
  const lastSeq = db.prepare('SELECT coalesce(max(seq), 0) FROM events').pluck();
  function* replayRows({ after = 0, upTo = Number.MAX_SAFE_INTEGER }: SeqRange = {}): IterableIterator<ReplayRow> {
    for (let from = after; ; ) {
      const rows = page.all(from, upTo) as ReplayRow[];
      yield* rows;
      if (rows.length < PAGE_SIZE) return;
      from = Number(rows[rows.length - 1]![0]);
    }
  }

  // The log, not the projection, decides an entry's version: a projection row edited by
  // hand must not put a gap into the log. The UNIQUE (pet_id, version) index answers this.
  const logVersion = db.prepare('SELECT coalesce(max(version), 0) FROM events WHERE pet_id = ?').pluck();
  const petEvents = db.prepare(`SELECT ${REPLAY_COLUMNS} FROM events WHERE pet_id = ? ORDER BY seq`).safeIntegers(true).raw();
  const currentEntry = (petId: bigint): Entry | undefined => {
    const entry = projection.get(petId);
    if ((entry?.version ?? 0) === logVersion.get(petId)) return entry;
    // The projection drifted: this entry is replayed from its own events.
    let replayed: Entry | undefined;
    for (const row of petEvents.all(petId) as ReplayRow[]) replayed = applyEvent(replayed, toAppliedEvent(row));
    return replayed;
  };

  const appendOne = (request: AppendRequest, meta: EventMeta, recordedAt: string, tip: Digest): Appended => {
    let entry = currentEntry(request.petId);
    const events: RecordedEvent[] = [];
    for (const event of request.decide(entry)) {
      const row = {
        seq: tip.seq + 1,
        petId: request.petId,
        version: (entry?.version ?? 0) + 1,
        type: event.type,
        data: encodeData(event),
        actor: meta.actor,
        requestId: meta.requestId,
        recordedAt,
        prevHash: tip.hash,
      };
      const hash = eventHash(row);
      insert.run({ ...row, hash });
      tip.seq = row.seq;
      tip.hash = hash;
      const recorded: RecordedEvent = { ...event, ...meta, seq: row.seq, petId: row.petId, version: row.version, recordedAt };
      entry = projection.apply(entry, recorded);
      events.push(recorded);
    }
    if (!entry) throw new Error(`append for pet ${request.petId} decided nothing`);
    return { entry, events };
  };

  const readTip = (): Digest => ({
    seq: Number(highestSeq.get() ?? 0),
    hash: (newest.get() as string | undefined) ?? GENESIS_HASH,
  });

  // One submission: all its requests or none (its own savepoint in a group commit).
  const appendAll = groupCommit(
    db,
    ({ requests, meta }: { requests: AppendRequest[]; meta: EventMeta }) => {
      const recordedAt = new Date(now()).toISOString();
      const tip = readTip();
      return requests.map((request) => appendOne(request, meta, recordedAt, tip));
    },
    { onCommit: deps.onCommit },
  );

  return {
    appendAll: (requests, meta) => appendAll({ requests, meta }),
    append: async (request, meta) => (await appendAll({ requests: [request], meta }))[0]!,
    replayRows,
    *replayEvents(range) {
      for (const row of replayRows(range)) yield toAppliedEvent(row);
    },
    lastSeq: () => lastSeq.get() as number,
  };
}

/** An event row with its chain columns, as verify-log reads it (raw, integers as BigInt). */
export type ChainRow = [
  seq: bigint, petId: bigint, version: bigint, type: string, data: string, actor: string,
  requestId: string, recordedAt: string, prevHash: string | null, hash: string | null,
];

/** Every event with its hash-chain columns, by seq (works on a read-only connection). */
export function readChain(db: Database.Database): IterableIterator<ChainRow> {
  return db
    .prepare('SELECT seq, pet_id, version, type, data, actor, request_id, recorded_at, prev_hash, hash FROM events ORDER BY seq')
    .safeIntegers(true)
    .raw()
    .iterate() as IterableIterator<ChainRow>;
}
