// Everything that reads, on the calling thread. Two kinds of read:
// - point reads (an entry, a key by hash, PRAGMA data_version) go by index and take
//   microseconds. On the service's WAL reader connection they cannot wait for the write
//   lock: a WAL reader reads its snapshot of the file while another connection writes
//   (it waits only while a crashed writer's log is recovered, at opening).
// - scans (the whole projection, the log) are read a page at a time (scans.ts); with
//   `yieldBetweenPages` (the service) they need a connection of their own (`scanDb`).
// The reads of the projection, of the log and of the audit each have their module; this
// one puts them together with the keys, the idempotency records and the change token.
import { makeChangeToken, type Db } from '../database.ts';
import { makeAuditReader, type AuditReader } from './audit-reads.ts';
import { makeIdempotencyReader, type IdempotencyTable } from '../idempotency.ts';
import { makeKeyReader, type KeyReader } from './key-reads.ts';
import { makeLogReader, type LogReader } from './log-reads.ts';
import { makeProjectionTable } from '../projection.ts';
import { makeProjectionReader, type ProjectionReader } from './projection-reads.ts';
import { makeScans } from './scans.ts';

export interface Reader extends ProjectionReader, LogReader, AuditReader {
  changeToken(): string;
  keys: KeyReader;
  idempotency: IdempotencyTable;
  ping(): void;
}

/** ownCommits: how many commits this process made through another connection (the
 * writer thread's), when it writes through one (makeChangeToken). */
export function makeReader(pointDb: Db, scanDb: Db, options: { yieldBetweenPages: boolean; ownCommits?: () => number }): Reader {
  const changes = makeChangeToken(pointDb, options.ownCommits);
  const ping = pointDb.prepare('SELECT 1').pluck();
  const scans = makeScans(options);
  const scanProjection = makeProjectionTable(scanDb);
  return {
    ...makeProjectionReader(pointDb, makeProjectionTable(pointDb), scanDb, scans, scanProjection),
    ...makeLogReader(pointDb, scanDb, scans, scanProjection),
    ...makeAuditReader(pointDb, scanDb, scans),
    changeToken: changes.current,
    keys: makeKeyReader(pointDb, changes),
    idempotency: makeIdempotencyReader(pointDb),
    ping: () => void ping.get(),
  };
}
