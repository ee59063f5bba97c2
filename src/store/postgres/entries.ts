// Reads entries as the log has them. As on SQLite, the log, not the projection, decides
// an entry's version: a projection row that disagrees with the log (edited by hand) is
// replayed from the pet's own events, so no append can put a gap into the log.
import type pg from 'pg';
import type { PetStatus } from '../../domain/events.ts';
import type { ReplayRow } from '../event-log.ts';
import { applyEvent, type Entry } from '../../domain/apply-event.ts';
import { toLoggedEvent } from '../replay-rows.ts';

export interface EntryRow {
  pet_id: bigint;
  quantity: number | null;
  status: PetStatus | null;
  version: number | null;
  updated_at: string | null;
  log_version: number;
}

/** The entries of the pets in pets, an SQL array of bigint. */
const entriesOf = (pets: string) => `
SELECT p.pet_id, i.quantity, i.status, i.version, i.updated_at,
       (SELECT coalesce(max(e.version), 0) FROM events e WHERE e.pet_id = p.pet_id) AS log_version
FROM unnest(${pets}) AS p(pet_id)
LEFT JOIN inventory i ON i.pet_id = p.pet_id`;

const ENTRIES = entriesOf('$1::bigint[]');

/**
 * The entries' read with the pet ids written into its text, for a round trip of several
 * statements (which takes no parameters): a batch reads them in its first round trip,
 * beside the chain head's lock, instead of a round trip of their own under it. The ids
 * are the BigInts of decided commands, printed as digits: nothing a client wrote.
 */
export function entriesRead(petIds: readonly bigint[]): string {
  return entriesOf(`'{${petIds.map(String).join(',')}}'::bigint[]`);
}

const PET_EVENTS = 'SELECT seq, pet_id, version, type, data, recorded_at FROM events WHERE pet_id = $1 ORDER BY seq';

export async function loadEntries(client: pg.ClientBase | pg.Pool, petIds: readonly bigint[]): Promise<Map<bigint, Entry>> {
  if (petIds.length === 0) return new Map();
  return entriesFrom(client, (await client.query<EntryRow>(ENTRIES, [petIds.map(String)])).rows);
}

/** The entries of the rows of ENTRIES (or entriesRead); a pet whose row disagrees with the
 * log is replayed from its events, read on client. */
export async function entriesFrom(client: pg.ClientBase | pg.Pool, rows: readonly EntryRow[]): Promise<Map<bigint, Entry>> {
  const found = new Map<bigint, Entry>();
  for (const row of rows) {
    if ((row.version ?? 0) === row.log_version) {
      if (row.version !== null) {
        found.set(row.pet_id, {
          petId: row.pet_id,
          quantity: row.quantity!,
          status: row.status!,
          version: row.version,
          updatedAt: row.updated_at!,
        });
      }
      continue;
    }
    const events = await client.query({ text: PET_EVENTS, values: [String(row.pet_id)], rowMode: 'array' });
    let replayed: Entry | undefined;
    for (const r of events.rows as ReplayRow[])
      replayed = applyEvent(replayed, toLoggedEvent([r[0], r[1], BigInt(r[2]), r[3], r[4], r[5]]));
    if (replayed) found.set(row.pet_id, replayed);
  }
  return found;
}
