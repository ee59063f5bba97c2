// Writes inventory entries as JSON. Pet ids can exceed 2^53, so they are printed from
// their BigInt as bare digits: JSON.stringify cannot, and a Number would round them.
import { createHash } from 'node:crypto';
import type { PetStatus } from '../../domain/events.ts';
import type { CachedList, InventoryRow, ListRender } from '../../application/read/inventory-cache.ts';
import type { Entry } from '../../domain/apply-event.ts';

function item(petId: bigint, quantity: number, status: PetStatus): string {
  // status is one of three fixed words: it needs no escaping.
  return `{"petId":${petId},"quantity":${quantity},"status":"${status}"}`;
}

export function itemJson(entry: Entry): string {
  return item(entry.petId, entry.quantity, entry.status);
}

/** Cache-Control of the list and of an entry: a client may keep them, but asks again
 * (conditionally, with the ETag) before it uses one. */
export const CACHE_CONTROL = 'private, no-cache';

export interface InventoryBody {
  body: Buffer;
  /** Strong; changes whenever any entry changes, a confirmed count included. */
  etag: string;
  /** The headers of a 200 with this body, made once for every answer that sends it. */
  headers: Readonly<Record<string, string>>;
}

/** The list's Content-Type, whole: set as it is, it needs no lookup per answer. */
const JSON_TYPE = 'application/json; charset=utf-8';

const CHUNK_BYTES = 64 * 1024;

/**
 * Renders the list row by row into one buffer of sizeHint bytes (the last render's size:
 * a PATCH changes a few digits) and 64 KiB to spare, so that the body is that buffer and
 * no copy of it; a list that outgrows it goes on into 64 KiB buffers, joined at the end.
 * No row's text outlives its row, so 100,000 entries cost little more memory than their
 * output. Rows can come a page at a time (add), so that reading them may yield to the
 * event loop.
 */
function makeInventoryRenderer(sizeHint = 0): { add(rows: Iterable<InventoryRow>): void; finish(): InventoryBody } {
  const chunks: Buffer[] = [];
  let chunk = Buffer.allocUnsafe(sizeHint + CHUNK_BYTES);
  let used = 0;
  let total = 0;
  const put = (text: string) => {
    // Every character is ASCII (digits, fixed words): one byte each.
    if (used + text.length > chunk.length) {
      chunks.push(chunk.subarray(0, used));
      chunk = Buffer.allocUnsafe(Math.max(CHUNK_BYTES, text.length));
      used = 0;
    }
    used += chunk.write(text, used, 'latin1');
    total += text.length;
  };
  // The versions go into the tag too: a confirmed count changes an entry, not the body.
  const versions = createHash('sha256');
  put('[');
  let first = true;
  return {
    add(rows) {
      for (const [petId, quantity, status, version] of rows) {
        put(first ? item(petId, quantity, status) : `,${item(petId, quantity, status)}`);
        versions.update(`${petId}:${version},`);
        first = false;
      }
    },
    finish() {
      put(']');
      chunks.push(chunk.subarray(0, used));
      const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, total);
      const tag = createHash('sha256').update(body).update(versions.digest()).digest('base64url').slice(0, 27);
      const etag = `"${tag}"`;
      return { body, etag, headers: Object.freeze({ ETag: etag, 'Cache-Control': CACHE_CONTROL, 'Content-Type': JSON_TYPE }) };
    },
  };
}

export function renderInventory(rows: Iterable<InventoryRow>, sizeHint?: number): InventoryBody {
  const renderer = makeInventoryRenderer(sizeHint);
  renderer.add(rows);
  return renderer.finish();
}

/** GET /v1/inventory's body and ETag, held in memory by the application's cache. */
export type InventoryCache = CachedList<InventoryBody>;

/** Renders the list for the cache: each render starts from the size of the last one. */
export function inventoryListRender(): ListRender<InventoryBody> {
  let lastSize = 0;
  return async (pages) => {
    const renderer = makeInventoryRenderer(lastSize);
    for await (const rows of pages) renderer.add(rows);
    const rendered = renderer.finish();
    lastSize = rendered.body.length;
    return rendered;
  };
}
