// Writes inventory entries as JSON. Pet ids can exceed 2^53, so they are printed from
// their BigInt as bare digits: JSON.stringify cannot, and a Number would round them.
import { createHash } from 'node:crypto';
import type { PetStatus } from '../domain/events.ts';
import type { Entry, InventoryRow, Projection } from '../store/projection.ts';

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
}

const CHUNK_BYTES = 64 * 1024;

/**
 * Renders the list row by row into one buffer of sizeHint bytes (the last render's size:
 * a PATCH changes a few digits) and 64 KiB to spare, so that the body is that buffer and
 * no copy of it; a list that outgrows it goes on into 64 KiB buffers, joined at the end.
 * No row's text outlives its row, so 100,000 entries cost little more memory than their
 * output. Rows can come a page at a time (add), so that reading them may yield to the
 * event loop.
 */
export function makeInventoryRenderer(sizeHint = 0): { add(rows: Iterable<InventoryRow>): void; finish(): InventoryBody } {
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
      return { body, etag: `"${tag}"` };
    },
  };
}

export function renderInventory(rows: Iterable<InventoryRow>, sizeHint?: number): InventoryBody {
  const renderer = makeInventoryRenderer(sizeHint);
  renderer.add(rows);
  return renderer.finish();
}

/** Told of each render, and of each answer that needed none of its own: from memory, or
 * sharing a render under way (the metrics count them). */
export interface InventoryCacheCounts {
  hit?: () => void;
  rendered?: () => void;
}

export interface InventoryCache {
  current(): Promise<InventoryBody>;
  /** The list held in memory if the store can tell at once that it is current; else
   * undefined (then current() knows). */
  peek(): InventoryBody | undefined;
}

/**
 * GET /v1/inventory's body and ETag, held in memory and rendered again only after the
 * projection may have changed: by this process, or by another one (an operator
 * command, a rebuild, a second service process), as the store's change token tells.
 *
 * One render at a time. Requests that arrive during a render of the state they would
 * render share it; those that need a newer state wait for it to end and then share the
 * next one. A render per request would give every PATCH+GET pair a whole list of its
 * own, with its chunks and its garbage, so that a burst of pairs against a large
 * inventory costs one render per pair instead of one per change the renders can see.
 */
export function makeInventoryCache(
  store: Pick<Projection, 'changeToken' | 'changeTokenNow' | 'inventoryRows'>,
  counts: InventoryCacheCounts = {},
): InventoryCache {
  let cached: { token: string; body: InventoryBody } | undefined;
  /** stamp: when its token was asked for (see asked below). */
  let rendering: { token: string; stamp: number; body: Promise<InventoryBody> } | undefined;
  // Counts requests for the token: a render whose token was asked for after a request
  // arrived shows every change committed before that request, whatever its token.
  let asked = 0;
  let lastSize = 0;
  const render = async (): Promise<InventoryBody> => {
    const renderer = makeInventoryRenderer(lastSize);
    for await (const rows of store.inventoryRows()) renderer.add(rows);
    const rendered = renderer.finish();
    lastSize = rendered.body.length;
    return rendered;
  };
  return {
    peek() {
      if (cached === undefined) return undefined;
      const token = store.changeTokenNow();
      if (token === undefined || token !== cached.token) return undefined;
      counts.hit?.();
      return cached.body;
    },
    async current() {
      const arrival = ++asked;
      for (;;) {
        // The token is read before rendering: a change that lands during the render is
        // seen by the next request.
        const stamp = ++asked;
        const token = await store.changeToken();
        if (cached?.token === token) {
          counts.hit?.();
          return cached.body;
        }
        if (rendering && (rendering.token === token || rendering.stamp > arrival)) {
          // A render of this very state, or of one read after this request arrived, is
          // under way: this request shares it.
          counts.hit?.();
          return rendering.body;
        }
        if (rendering) {
          // An older state is being rendered: wait for it, then look again.
          await rendering.body.catch(() => undefined);
          continue;
        }
        counts.rendered?.();
        const started = { token, stamp, body: render() };
        rendering = started;
        started.body.then(
          (body) => {
            if (rendering === started) rendering = undefined;
            cached = { token, body };
          },
          () => {
            if (rendering === started) rendering = undefined;
          },
        );
        return started.body;
      }
    },
  };
}
