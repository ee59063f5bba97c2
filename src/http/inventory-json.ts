// Writes inventory entries as JSON. Pet ids can exceed 2^53, so they are printed from
// their BigInt as bare digits: JSON.stringify cannot, and a Number would round them.
import { createHash } from 'node:crypto';
import type { Entry } from '../store/projection.ts';

export function itemJson(entry: Entry): string {
  // status is one of three fixed words: it needs no escaping.
  return `{"petId":${entry.petId},"quantity":${entry.quantity},"status":"${entry.status}"}`;
}

/** The list body and a strong ETag that changes whenever any entry changes. */
export function inventoryJson(entries: Entry[]): { body: string; etag: string } {
  const body = `[${entries.map(itemJson).join(',')}]`;
  // The versions go in too: a confirmed count changes an entry without changing the body.
  const hash = createHash('sha256').update(body);
  for (const entry of entries) hash.update(`${entry.version},`);
  return { body, etag: `"${hash.digest('base64url').slice(0, 27)}"` };
}
