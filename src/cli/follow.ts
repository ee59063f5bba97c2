// scripts/follow: print the event log as it grows, from the database, through the same
// page read as GET /v1/events (the port's eventsAfter) and from the same cursors (a seq,
// or the digest SEQ:HASH, refused when past the head or not in this log); new events are
// looked for when the store's change token moves (another process committed), and every
// second anyway.
import { setTimeout as sleep } from 'node:timers/promises';
import { eventJson } from '../feed/event-json.ts';
import { pageAfter, parseCursor } from '../feed/position.ts';
import type { ChainRow } from '../store/event-log.ts';
import { openExistingStore, parse, run, UsageError } from './common.ts';

const USAGE = `
Usage: scripts/follow [--after CURSOR] [--format text|jsonl] [--db PATH|URL]

Prints the events of the log after CURSOR (0: from the first), then every new event as
it is committed, by any process or instance, until interrupted (read-only).
  --after CURSOR    start after this seq, or after the digest SEQ:HASH of the last event
                    seen, which must be in this log (default 0)
  --format FORMAT   text (default): one line per event, seq, time, type, pet, data, actor
                    and request id; jsonl: one JSON object per line, the event as
                    GET /v1/events sends it (every field its hash covers)
  --db PATH         the database file or postgres:// URL (default: $INVENTORY_DB, else data/inventory.db)
  -h, --help        this text

Exit status: 0 interrupted (Ctrl-C, SIGTERM) or its reader went away, 1 failure (a cursor
past the head or not in this log included), 2 usage error.
`;

const PAGE = 1000;
const POLL_MS = 100;
const FALLBACK_MS = 1000;

function textLine([seq, petId, , type, data, actor, requestId, recordedAt]: ChainRow): string {
  return `${seq}  ${recordedAt}  ${type}  pet ${petId}  ${data}  ${actor}  ${requestId}`;
}

await run(USAGE, async (argv) => {
  const { values, positionals } = parse(argv, { after: { type: 'string' }, format: { type: 'string' } });
  if (positionals.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(positionals[0])}`);
  const after = values.after === undefined ? '0' : String(values.after);
  const start = parseCursor(after);
  if (!start) throw new UsageError(`--after must be a seq (decimal digits, 0 or more) or a digest SEQ:HASH, not ${JSON.stringify(after)}`);
  const format = values.format === undefined ? 'text' : String(values.format);
  if (format !== 'text' && format !== 'jsonl') throw new UsageError(`--format must be text or jsonl, not ${JSON.stringify(format)}`);
  const line = format === 'jsonl' ? eventJson : textLine;

  const store = await openExistingStore(values, { readonly: true, listen: true });
  let stopping = false;
  const stop = () => (stopping = true);
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  // A reader that went away (a pipe into head) ends the command, quietly.
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
    stop();
  });
  try {
    // A cursor past the head or not in this log stops here, naming the head.
    await pageAfter(store, start, 0);
    let cursor = start.seq;
    let token = await store.changeToken();
    let lastRead = 0;
    while (!stopping) {
      lastRead = Date.now();
      const rows = await store.eventsAfter(cursor, PAGE);
      if (rows.length > 0) {
        const text = rows.map((row) => `${line(row)}\n`).join('');
        cursor = rows[rows.length - 1]![0];
        if (!process.stdout.write(text)) {
          await new Promise((resolve) => {
            process.stdout.once('drain', resolve);
            process.stdout.once('error', resolve);
          });
        }
      }
      if (rows.length === PAGE) continue;
      // Caught up: wait for a commit (the change token) or the fallback second.
      while (!stopping) {
        await sleep(POLL_MS);
        const now = await store.changeToken();
        if (now !== token || Date.now() - lastRead >= FALLBACK_MS) {
          token = now;
          break;
        }
      }
    }
    return 0;
  } finally {
    await store.close();
  }
});
