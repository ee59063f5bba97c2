// An event of the log as the change feed shows it: every field the hash chain covers, so
// that a consumer can check the chain it has seen. seq and petId are printed from their
// BigInt as bare digits (exact above 2^53); data is the stored JSON text itself, so that
// JSON.stringify of the parsed member gives back the very text that was hashed.
import type { ChainRow } from '../store/event-log.ts';

export function eventJson([seq, petId, version, type, data, actor, requestId, recordedAt, prevHash, hash]: ChainRow): string {
  return (
    `{"seq":${seq},"petId":${petId},"version":${version},"type":${JSON.stringify(type)},"data":${data},` +
    `"actor":${JSON.stringify(actor)},"requestId":${JSON.stringify(requestId)},"recordedAt":${JSON.stringify(recordedAt)},` +
    `"prevHash":${JSON.stringify(prevHash)},"hash":${JSON.stringify(hash)}}`
  );
}

/** The cursor that names this event: its seq and hash. */
export function digestOf(row: ChainRow): string {
  return `${row[0]}:${row[9]}`;
}

/** One Server-Sent Events message: the id is the digest. No event name: an EventSource
 * delivers named events only to listeners of that name, never to onmessage, and the
 * type is in the object. */
export function sseMessage(row: ChainRow): string {
  return `id: ${digestOf(row)}\ndata: ${eventJson(row)}\n\n`;
}
