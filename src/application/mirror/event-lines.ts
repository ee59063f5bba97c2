// An events bundle (tile/events/<N>) read back as the log's rows, each event's hash
// recomputed from its fields and linked to the one before it: what a copy keeps is what
// was hashed, or it keeps nothing of the bundle.
import { eventHash } from '../../store/hash-chain.ts';
import type { ChainRow } from '../../store/event-log.ts';
import type { FeedEvent } from '../verify/verify-signed.ts';

/** seq and petId as written (JSON numbers may exceed 2^53). */
const IDS = /^\{"seq":(\d+),"petId":(\d+),/;

/**
 * The rows of a bundle whose first event has seq first and follows the event with hash
 * prevHash, or why they are not the log's: a line that is no event, a seq out of place, a
 * broken link, a hash that its fields do not give.
 */
export function bundleRows(text: string, first: number, prevHash: string): ChainRow[] | string {
  if (!text.endsWith('\n')) return 'the bundle does not end with a newline';
  const rows: ChainRow[] = [];
  let prev = prevHash;
  for (const line of text.slice(0, -1).split('\n')) {
    const seq = first + rows.length;
    const ids = IDS.exec(line);
    let e: FeedEvent;
    try {
      e = JSON.parse(line) as FeedEvent;
    } catch {
      return `line ${rows.length + 1} is not JSON`;
    }
    if (!ids || typeof e.hash !== 'string') return `line ${rows.length + 1} is not an event`;
    if (ids[1] !== String(seq)) return `seq ${seq} was expected, not ${ids[1]}`;
    if (e.prevHash !== prev) return `the event with seq ${seq} does not link to the one before it`;
    const fields = { ...e, seq: BigInt(ids[1]), petId: BigInt(ids[2]!), data: JSON.stringify(e.data) };
    if (eventHash(fields) !== e.hash) return `the event with seq ${seq}: its hash is not its fields' (a field was changed)`;
    rows.push([fields.seq, fields.petId, BigInt(e.version), e.type, fields.data, e.actor, e.requestId, e.recordedAt, e.prevHash, e.hash]);
    prev = e.hash;
  }
  return rows;
}
