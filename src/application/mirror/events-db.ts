// A copy's events.db: a SQLite database made by the service's own migrations, holding the
// copy's events verbatim and what the service derives from them (the projection, the
// tree, the auditors' stock_adjustments), no key and no idempotency record, so that the
// auditors' guide's queries run on it unchanged. It is made anew beside the old one and
// renamed over it: a reader never sees it half filled.
import { renameSync, rmSync } from 'node:fs';
import type { ChainRow } from '../../store/event-log.ts';
import { openStore } from '../../store/open.ts';

export async function writeEventsDb(file: string, logId: string, events: AsyncIterable<ChainRow[]>): Promise<number> {
  const temp = `${file}.${process.pid}.tmp`;
  rmSync(temp, { force: true });
  const store = await openStore(temp, { listen: false });
  try {
    const { events: copied } = await store.importHistory({ events, keys: [], keyEvents: [], logId });
    await store.close();
    renameSync(temp, file);
    return copied;
  } catch (error) {
    await store.close();
    rmSync(temp, { force: true });
    throw error;
  }
}
