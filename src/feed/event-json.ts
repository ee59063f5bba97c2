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

/** One Server-Sent Events message: the id is the seq, the event name the type. */
export function sseMessage(row: ChainRow): string {
  return `id: ${row[0]}\nevent: ${row[3]}\ndata: ${eventJson(row)}\n\n`;
}
