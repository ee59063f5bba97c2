// Reads one entry as the log has it. The log, not the projection, decides an entry's
// version: a projection row edited by hand must not put a gap into the log, so a row
// that disagrees with the log's version is replayed from the pet's own events.
import type { Db } from '../database.ts';
import type { ReplayRow } from '../../event-log.ts';
import { applyEvent, type Entry } from '../../../domain/apply-event.ts';
import { toLoggedEvent } from '../../replay-rows.ts';
import type { ProjectionTable } from '../projection.ts';

export function makeEntryReader(db: Db, projection: ProjectionTable): (petId: bigint) => Entry | undefined {
  // The UNIQUE (pet_id, version) index answers this.
  const logVersion = db.prepare('SELECT coalesce(max(version), 0) FROM events WHERE pet_id = ?').pluck();
  const petEvents = db
    .prepare('SELECT seq, pet_id, version, type, data, recorded_at FROM events WHERE pet_id = ? ORDER BY seq')
    .safeIntegers(true)
    .raw();
  return (petId) => {
    const entry = projection.get(petId);
    if ((entry?.version ?? 0) === logVersion.get(petId)) return entry;
    let replayed: Entry | undefined;
    for (const row of petEvents.all(petId) as ReplayRow[]) replayed = applyEvent(replayed, toLoggedEvent(row));
    return replayed;
  };
}
