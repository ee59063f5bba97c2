// Reads entries as the log has them. As on SQLite, the log, not the projection, decides
// an entry's version: a projection row that disagrees with the log (edited by hand) is
// replayed from the pet's own events, so no append can put a gap into the log.
import type pg from 'pg';
import type { PetStatus } from '../../domain/events.ts';
import type { ReplayRow } from '../event-log.ts';
import { applyEvent, type Entry } from '../../domain/apply-event.ts';
import { toLoggedEvent } from '../replay-rows.ts';

interface EntryRow {
  pet_id: bigint;
  quantity: number | null;
  status: PetStatus | null;
  version: number | null;
  updated_at: string | null;
  log_version: number;
}

const ENTRIES = `
SELECT p.pet_id, i.quantity, i.status, i.version, i.updated_at,
       (SELECT coalesce(max(e.version), 0) FROM events e WHERE e.pet_id = p.pet_id) AS log_version
FROM unnest($1::bigint[]) AS p(pet_id)
LEFT JOIN inventory i ON i.pet_id = p.pet_id`;

const PET_EVENTS = 'SELECT seq, pet_id, version, type, data, recorded_at FROM events WHERE pet_id = $1 ORDER BY seq';

export async function loadEntries(client: pg.ClientBase | pg.Pool, petIds: readonly bigint[]): Promise<Map<bigint, Entry>> {
  const found = new Map<bigint, Entry>();
  if (petIds.length === 0) return found;
  const { rows } = await client.query<EntryRow>(ENTRIES, [petIds.map(String)]);
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
