// A batch of submissions in ONE transaction and four round trips, however many requests
// it holds: (1) BEGIN, the lock timeout and the chain head locked FOR UPDATE, (2) the
// entries of the batch's pets, read after the lock so no other instance can change them
// meanwhile, (3) every event inserted, every entry upserted and the head moved on in one
// statement (arrays through unnest), (4) COMMIT. Each submission is decided here, in
// order, as a savepoint would: one that conflicts fails alone, and later ones on its
// pets fail with it (they were decided against its result). Hashes are computed here
// with the same encoding as on SQLite, so both stores give the same chain. A batch
// holds the Idempotency-Keys of its submissions (advisory locks, idempotency.ts) from
// its first round trip, before it waits for the chain head; a submission whose key
// another batch holds fails at once with IdempotencyKeyInFlight.
import type pg from 'pg';
import { encodeData } from '../../domain/codec.ts';
import type { RecordedEvent } from '../../domain/events.ts';
import { eventHash } from '../hash-chain.ts';
import {
  IdempotencyKeyInFlight,
  IdempotencyKeyTaken,
  RECORD_COLUMNS,
  recordOfRow,
  rowOfRecord,
  scopeId,
  type IdempotencyRecord,
  type RecordRow,
} from '../idempotency.ts';
import {
  CommitUnconfirmed,
  VersionConflict,
  type Appended,
  type BatchOptions,
  type Entry,
  type Outcome,
  type Submission,
} from '../port.ts';
import { applyEvent } from '../projection.ts';
import { CHANGES_CHANNEL } from './changes.ts';
import { inTransaction } from './connection.ts';
import { loadEntries } from './entries.ts';
import { keyLockOf } from './idempotency.ts';

/** The lock wait when the caller sets no deadline (operator commands). */
const DEFAULT_LOCK_WAIT_MS = 5_000;

const WRITE = `
WITH new_events AS (
  INSERT INTO events (seq, pet_id, version, type, data, actor, request_id, recorded_at, prev_hash, hash)
  SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::integer[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[])
), new_entries AS (
  INSERT INTO inventory (pet_id, quantity, status, version, updated_at)
  SELECT * FROM unnest($11::bigint[], $12::integer[], $13::text[], $14::integer[], $15::text[])
  ON CONFLICT (pet_id) DO UPDATE SET quantity = excluded.quantity, status = excluded.status,
    version = excluded.version, updated_at = excluded.updated_at
), new_records AS (
  -- In place of an expired record of the same key, not yet removed.
  INSERT INTO idempotency_keys (${RECORD_COLUMNS.join(', ')})
  SELECT * FROM unnest($18::text[], $19::text[], $20::text[], $21::text[], $22::integer[], $23::text[], $24::text[], $25::text[], $26::text[])
  ON CONFLICT (api_key, path, idempotency_key) DO UPDATE SET
    ${RECORD_COLUMNS.slice(3)
      .map((c) => `${c} = excluded.${c}`)
      .join(', ')}
  WHERE idempotency_keys.expires_at <= excluded.created_at
)
UPDATE chain_head SET seq = $16, hash = $17, changes = changes + 1
RETURNING changes, pg_notify('${CHANGES_CHANNEL}', changes::text)`;

/** Where WRITE's parameters hold the chain's new head: $16 (seq) and $17 (hash). */
const HEAD_SEQ = 15;

/**
 * BEGIN with a lock timeout and the chain head locked: the first round trip of every
 * write. keyLocks: the advisory locks of Idempotency-Keys to try first (never waited for).
 */
export function beginLocked(waitMs: number, keyLocks: readonly bigint[] = []): string {
  // The locks are numbers this process computed, not text from a client.
  const tryKeys =
    keyLocks.length === 0
      ? ''
      : ` SELECT k::text AS key_lock, pg_try_advisory_xact_lock(k) AS locked FROM unnest(ARRAY[${keyLocks.join(', ')}]::bigint[]) AS k;`;
  return `BEGIN; SET LOCAL lock_timeout = ${Math.max(1, Math.floor(waitMs))};${tryKeys} SELECT seq, hash FROM chain_head FOR UPDATE`;
}

export interface Head {
  seq: bigint;
  hash: string;
}

export function headOf(result: pg.QueryResult | pg.QueryResult[]): Head {
  const selected = (Array.isArray(result) ? result : [result]).find(
    (r) => r.command === 'SELECT' && r.fields.some((f) => f.name === 'seq'),
  );
  return selected!.rows[0] as Head;
}

/** The chain head, the entries and the idempotency records as a batch has moved them so far. */
interface State {
  seq: bigint;
  hash: string;
  entries: Map<bigint, Entry>;
  /** By scopeId: the records stored for the batch's keys, expired ones included. */
  records: Map<string, IdempotencyRecord>;
  /** By scopeId: the batch's keys that another batch holds (in flight there). */
  busy: ReadonlySet<string>;
}

interface Plan {
  outcomes: Outcome<Appended[]>[];
  /** The WRITE statement's parameters; undefined when nothing is to be written. */
  params?: unknown[];
  /** The state after the plan's events. */
  next: State;
}

/**
 * Decides submissions in order against state, as savepoints would: one that conflicts
 * fails alone, and later ones on its pets fail with it (they were decided against its
 * result). Returns the events to write and the state after them; state is not changed.
 */
function plan(submissions: readonly Submission[], state: State, failedPets: Map<bigint, unknown>): Plan {
  const entries = new Map(state.entries);
  const records = new Map(state.records);
  const cols = Array.from({ length: 10 }, () => [] as unknown[]);
  const recordCols = Array.from({ length: RECORD_COLUMNS.length }, () => [] as unknown[]);
  const changed = new Map<bigint, Entry>();
  let seq = state.seq;
  let prevHash = state.hash;
  const outcomes = submissions.map(({ meta, recordedAt, appends, idempotency }): Outcome<Appended[]> => {
    const stale = appends.find((a) => failedPets.has(a.petId));
    if (stale) {
      const cause = failedPets.get(stale.petId);
      return {
        ok: false,
        error: cause instanceof VersionConflict ? new VersionConflict(stale.petId, stale.expectedVersion, undefined) : cause,
      };
    }
    if (idempotency) {
      const { record, decidedOn } = idempotency;
      const taken = records.get(scopeId(record));
      if (taken && taken.expiresAt > record.createdAt) {
        // Nothing written: later submissions on these pets were decided against a
        // result that did not happen, and are decided again.
        for (const a of appends) failedPets.set(a.petId, new VersionConflict(a.petId, a.expectedVersion, undefined));
        return { ok: false, error: new IdempotencyKeyTaken(taken) };
      }
      // Being processed by another batch (another instance), not stored yet: refused,
      // not waited for. A stored answer comes first: it can be replayed.
      if (state.busy.has(scopeId(record))) {
        for (const a of appends) failedPets.set(a.petId, new VersionConflict(a.petId, a.expectedVersion, undefined));
        return { ok: false, error: new IdempotencyKeyInFlight() };
      }
      const actual = entries.get(decidedOn.petId)?.version ?? 0;
      if (appends.length === 0 && actual !== decidedOn.version) {
        return { ok: false, error: new VersionConflict(decidedOn.petId, decidedOn.version, actual) };
      }
    }
    // Each append is checked against the entry as the submission's earlier appends left
    // it; a conflict anywhere undoes the whole submission.
    const mark = { rows: cols[0]!.length, seq, prevHash };
    // The entries this submission touched, as they were before it.
    const touched = new Map<bigint, [Entry | undefined, Entry | undefined]>();
    const appended: Appended[] = [];
    for (const { petId, expectedVersion, events: decided } of appends) {
      let entry = entries.get(petId);
      if ((entry?.version ?? 0) !== expectedVersion) {
        const error = new VersionConflict(petId, expectedVersion, entry?.version ?? 0);
        for (const col of cols) col.length = mark.rows;
        ({ seq, prevHash } = mark);
        for (const [pet, [before, changedBefore]] of touched) {
          if (before) entries.set(pet, before);
          else entries.delete(pet);
          if (changedBefore) changed.set(pet, changedBefore);
          else changed.delete(pet);
        }
        for (const a of appends) failedPets.set(a.petId, error);
        return { ok: false, error };
      }
      const events: RecordedEvent[] = [];
      for (const event of decided) {
        seq += 1n;
        const row = {
          prevHash,
          seq,
          petId,
          version: (entry?.version ?? 0) + 1,
          type: event.type,
          data: encodeData(event),
          actor: meta.actor,
          requestId: meta.requestId,
          recordedAt,
        };
        const hash = eventHash(row);
        [String(seq), String(petId), row.version, row.type, row.data, row.actor, row.requestId, recordedAt, prevHash, hash].forEach(
          (v, i) => cols[i]!.push(v),
        );
        prevHash = hash;
        const recorded: RecordedEvent = { ...event, ...meta, seq: Number(seq), petId, version: row.version, recordedAt };
        entry = applyEvent(entry, recorded);
        events.push(recorded);
      }
      if (!entry) throw new Error(`append for pet ${petId} decided nothing`);
      if (!touched.has(petId)) touched.set(petId, [entries.get(petId), changed.get(petId)]);
      entries.set(petId, entry);
      changed.set(petId, entry);
      appended.push({ entry, events });
    }
    if (idempotency) {
      records.set(scopeId(idempotency.record), idempotency.record);
      rowOfRecord(idempotency.record).forEach((v, i) => recordCols[i]!.push(v));
    }
    return { ok: true, value: appended };
  });
  const next = { seq, hash: prevHash, entries, records, busy: state.busy };
  if (cols[0]!.length === 0 && recordCols[0]!.length === 0) return { outcomes, next };
  const finals = [...changed.values()];
  const params = [
    ...cols,
    finals.map((e) => String(e.petId)),
    finals.map((e) => e.quantity),
    finals.map((e) => e.status),
    finals.map((e) => e.version),
    finals.map((e) => e.updatedAt),
    String(seq),
    prevHash,
    ...recordCols,
  ];
  return { outcomes, params, next };
}

export async function appendBatch(
  pool: pg.Pool,
  submissions: readonly Submission[],
  options: BatchOptions,
  onCommitted: (changes: bigint) => void,
): Promise<Outcome<Appended[]>[]> {
  const waitMs = options.waitUntil === undefined ? DEFAULT_LOCK_WAIT_MS : options.waitUntil - Date.now();
  let changes: bigint | undefined;
  // The chain's new head as the batch's writes left it: where to look for the batch
  // later if its commit cannot be confirmed.
  let head: { seq: bigint; hash: string } | undefined;
  const write = async (client: pg.PoolClient, params: unknown[]) => {
    changes = (await client.query<{ changes: bigint }>(WRITE, params)).rows[0]!.changes;
    head = { seq: BigInt(params[HEAD_SEQ] as string), hash: params[HEAD_SEQ + 1] as string };
  };
  const bounds = options.waitUntil === undefined ? undefined : { deadline: options.waitUntil, onCommitting: options.onCommitting };
  const keyLocks = new Map<string, string>();
  for (const s of submissions) if (s.idempotency) keyLocks.set(scopeId(s.idempotency.record), String(keyLockOf(s.idempotency.record)));
  const outcomes = await inTransaction(
    pool,
    `${beginLocked(waitMs, [...new Set(keyLocks.values())].map(BigInt))}; SAVEPOINT batch`,
    async (client, begun) => {
      const head = headOf(begun);
      const held = new Set(
        (Array.isArray(begun) ? begun : [begun])
          .flatMap((r) => (r.fields.some((f) => f.name === 'key_lock') ? (r.rows as { key_lock: string; locked: boolean }[]) : []))
          .flatMap((r) => (r.locked ? [] : [r.key_lock])),
      );
      const petIds = [
        ...new Set(
          submissions.flatMap((s) => [...s.appends.map((a) => a.petId), ...(s.idempotency ? [s.idempotency.decidedOn.petId] : [])]),
        ),
      ];
      const start: State = {
        seq: head.seq,
        hash: head.hash,
        entries: await loadEntries(client, petIds),
        records: await loadRecords(client, submissions),
        busy: new Set([...keyLocks].flatMap(([scope, lock]) => (held.has(lock) ? [scope] : []))),
      };
      const whole = plan(submissions, start, new Map());
      if (!whole.params) return whole.outcomes;
      try {
        await write(client, whole.params);
        return whole.outcomes;
      } catch (error) {
        // One submission's rows broke a constraint or found no room: undo the statement
        // and write the submissions one at a time, each in a savepoint, so that exactly
        // the ones that fail fail (with their own error), as on SQLite. Had the
        // connection or the transaction been lost, this rollback fails and the batch with it.
        await client.query('ROLLBACK TO SAVEPOINT batch').catch(() => Promise.reject(error as Error));
        return oneByOne(client, submissions, start, write);
      }
    },
    bounds,
  ).catch((error: unknown) => {
    // A commit whose answer was lost is looked up later by the events it would have added.
    if (error instanceof CommitUnconfirmed && head) {
      throw new CommitUnconfirmed({ ...error.batch, ...head }, { cause: error.cause });
    }
    throw error;
  });
  if (changes !== undefined) onCommitted(changes);
  return outcomes;
}

async function oneByOne(
  client: pg.PoolClient,
  submissions: readonly Submission[],
  start: State,
  write: (client: pg.PoolClient, params: unknown[]) => Promise<void>,
): Promise<Outcome<Appended[]>[]> {
  let state = start;
  const failedPets = new Map<bigint, unknown>();
  const outcomes: Outcome<Appended[]>[] = [];
  for (const submission of submissions) {
    const single = plan([submission], state, failedPets);
    const outcome = single.outcomes[0]!;
    if (!single.params) {
      outcomes.push(outcome);
      continue;
    }
    await client.query('SAVEPOINT submission');
    try {
      await write(client, single.params);
      await client.query('RELEASE SAVEPOINT submission');
      state = single.next;
      outcomes.push(outcome);
    } catch (error) {
      await client.query('ROLLBACK TO SAVEPOINT submission').catch(() => Promise.reject(error as Error));
      for (const a of submission.appends) failedPets.set(a.petId, error);
      outcomes.push({ ok: false, error });
    }
  }
  return outcomes;
}

const RECORDS = `SELECT ${RECORD_COLUMNS.join(', ')} FROM idempotency_keys
  WHERE (api_key, path, idempotency_key) IN (SELECT * FROM unnest($1::text[], $2::text[], $3::text[]))`;

/** The stored records of the batch's keys, read under the chain head's lock (every writer
 * of records holds it), so that no other instance can store one of them meanwhile. */
async function loadRecords(client: pg.PoolClient, submissions: readonly Submission[]): Promise<Map<string, IdempotencyRecord>> {
  const scopes = submissions.flatMap((s) => (s.idempotency ? [s.idempotency.record] : []));
  const found = new Map<string, IdempotencyRecord>();
  if (scopes.length === 0) return found;
  const { rows } = await client.query<RecordRow>(RECORDS, [
    scopes.map((s) => s.apiKey),
    scopes.map((s) => s.path),
    scopes.map((s) => s.key),
  ]);
  for (const row of rows) {
    const record = recordOfRow(row);
    found.set(scopeId(record), record);
  }
  return found;
}
