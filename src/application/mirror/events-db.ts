// A copy's events.db: a SQLite database made by the service's own migrations, holding the
// copy's events verbatim and what the service derives from them (the projection, the
// tree, the auditors' stock_adjustments), no key and no idempotency record, so that the
// auditors' guide's queries run on it unchanged. A later run appends the events that
// followed, in one transaction (a reader sees it before or after, never between). The
// first run, or one whose events.db does not hold a beginning of the copy's log (of
// another log, or past it), makes it anew beside the old one and renames it over it.
import { existsSync, renameSync, rmSync } from 'node:fs';
import type { ChainRow } from '../../store/event-log.ts';
import { HistoryDiverged } from '../../store/history-copy.ts';
import { openStore } from '../../store/open.ts';

interface EventsDbUpdate {
  file: string;
  logId: string;
  /** The copy's events: size of them. */
  size: number;
  /** The copy's events after the first `after`, in pages. */
  rowsAfter: (after: number) => AsyncIterable<ChainRow[]>;
}

/** Appends what events.db lacks; false when it cannot (then it is to be made anew). */
async function extended({ file, logId, size, rowsAfter }: EventsDbUpdate): Promise<boolean> {
  if (!existsSync(file)) return false;
  const store = await openStore(file, { listen: false });
  try {
    const head = await store.logHead();
    if (head.logId !== logId || head.seq > size) return false;
    if (head.seq < size) await store.appendHistory(rowsAfter(head.seq));
    return true;
  } catch (error) {
    if (error instanceof HistoryDiverged) return false;
    throw error;
  } finally {
    await store.close();
  }
}

async function writeWhole({ file, logId, rowsAfter }: EventsDbUpdate): Promise<void> {
  const temp = `${file}.${process.pid}.tmp`;
  rmSync(temp, { force: true });
  const store = await openStore(temp, { listen: false });
  try {
    await store.importHistory({ events: rowsAfter(0), keys: [], keyEvents: [], logId });
    await store.close();
    renameSync(temp, file);
  } catch (error) {
    await store.close();
    rmSync(temp, { force: true });
    throw error;
  }
}

/** Brings events.db to the copy's events. */
export async function updateEventsDb(update: EventsDbUpdate): Promise<void> {
  if (!(await extended(update))) await writeWhole(update);
}
