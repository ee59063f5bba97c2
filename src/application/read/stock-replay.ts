// The stock of pets as of a past moment (scripts/stock-at), replayed with the
// projection's own rule (applyEvent). For one pet only its events are read, by index, and
// the time index tells where the whole replay would have stopped: never the whole log.
import { applyEvent, type Entry } from '../../domain/apply-event.ts';
import { toLoggedEvent } from '../../store/replay-rows.ts';
import type { AuditReads } from '../../store/audit-reads.ts';
import type { EventLog } from '../../store/event-log.ts';

/** The stock as of the replay's stop, and the events recorded at or before TIME left out after it. */
export interface Replayed {
  stock: Map<bigint, Entry>;
  leftOut: number;
}

/** Every event in seq order, up to the first recorded after `at`. Past it the stock is as it
 * stood then: events after that one but recorded at or before TIME (a clock set back)
 * would otherwise be folded onto a state that lacks the events between, giving a row the
 * pet never had. */
export async function replayAll(store: Pick<EventLog, 'replayRows'>, at: string): Promise<Replayed> {
  const stock = new Map<bigint, Entry>();
  let stopped = false;
  let leftOut = 0;
  for await (const rows of store.replayRows()) {
    for (const row of rows) {
      const [, petId, , , , recordedAt] = row;
      if (recordedAt > at) stopped = true;
      else if (stopped) leftOut++;
      else stock.set(petId, applyEvent(stock.get(petId), toLoggedEvent(row)));
    }
  }
  return { stock, leftOut };
}

/** The same replay for one pet: its events by index, the stop (the first seq recorded
 * after `at`, of any pet) from the time index. */
export async function replayPet(store: Pick<AuditReads, 'petEvents' | 'firstSeqAfter'>, petId: bigint, at: string): Promise<Replayed> {
  // Neither read waits for the other: on PostgreSQL they run on two connections at once.
  const [stop, rows] = await Promise.all([store.firstSeqAfter(at), store.petEvents(petId)]);
  const stock = new Map<bigint, Entry>();
  let leftOut = 0;
  for (const row of rows) {
    const [seq, , , , , recordedAt] = row;
    if (stop === undefined || seq < stop) stock.set(petId, applyEvent(stock.get(petId), toLoggedEvent(row)));
    else if (recordedAt <= at) leftOut++;
  }
  return { stock, leftOut };
}
