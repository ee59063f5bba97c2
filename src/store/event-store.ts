// The event log. Only this module speaks SQL to the `events` table. An append reads the
// entry, lets the caller decide, inserts the events (each chained to the one before by
// its hash) and applies them to the projection, all in one transaction: the log and
// the projection never disagree.
// append returns a Promise, so that commits can be batched, or the log moved to another
// database, without touching its callers.
import type Database from 'better-sqlite3';
import { decodeEvent, encodeData } from '../domain/codec.ts';
import type { DomainEvent, EntryState, EventMeta, RecordedEvent } from '../domain/events.ts';
import { eventHash, GENESIS_HASH, type Digest } from './hash-chain.ts';
import type { Entry, Projection } from './projection.ts';

export interface AppendRequest {
  petId: bigint;
  decide: (state: EntryState | undefined) => DomainEvent[];
}

export interface Appended {
  entry: Entry;
  events: RecordedEvent[];
}

export interface EventStore {
  append(request: AppendRequest, meta: EventMeta): Promise<Appended>;
  /** All requests in one transaction: all are appended, or (on any throw) none. */
  appendAll(requests: AppendRequest[], meta: EventMeta): Promise<Appended[]>;
  /** Every event, by sequence number. */
  readAll(): IterableIterator<RecordedEvent>;
}

interface EventRow {
  seq: bigint;
  pet_id: bigint;
  version: bigint;
  type: string;
  data: string;
  actor: string;
  request_id: string;
  recorded_at: string;
}

export function toRecordedEvent(row: EventRow): RecordedEvent {
  return {
    ...decodeEvent(row.type, row.data),
    seq: Number(row.seq),
    petId: row.pet_id,
    version: Number(row.version),
    actor: row.actor,
    requestId: row.request_id,
    recordedAt: row.recorded_at,
  };
}

export function makeEventStore(
  db: Database.Database,
  deps: { projection: Projection; now: () => number },
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
  const all = db
    .prepare('SELECT seq, pet_id, version, type, data, actor, request_id, recorded_at FROM events ORDER BY seq')
    .safeIntegers(true);

  const appendOne = (request: AppendRequest, meta: EventMeta, recordedAt: string, tip: Digest): Appended => {
    let entry = projection.get(request.petId);
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

  const appendInTransaction = db.transaction((requests: AppendRequest[], meta: EventMeta) => {
    const recordedAt = new Date(now()).toISOString();
    const tip: Digest = {
      seq: Number(highestSeq.get() ?? 0),
      hash: (newest.get() as string | undefined) ?? GENESIS_HASH,
    };
    return requests.map((request) => appendOne(request, meta, recordedAt, tip));
  });

  const appendAll = (requests: AppendRequest[], meta: EventMeta): Promise<Appended[]> =>
    new Promise((resolve) => resolve(appendInTransaction.immediate(requests, meta)));

  return {
    appendAll,
    append: async (request, meta) => (await appendAll([request], meta))[0]!,
    *readAll() {
      for (const row of all.iterate() as IterableIterator<EventRow>) yield toRecordedEvent(row);
    },
  };
}
