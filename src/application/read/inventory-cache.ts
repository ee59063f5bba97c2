// The inventory list as the service answers it, held in memory and rendered again only
// after the projection may have changed: by this process, or by another one (an operator
// command, a rebuild, a second service process), as the store's change token tells. How
// a list is rendered (its bytes, its tag) is the caller's: the cache keeps what it gives.
//
// One render at a time. Requests that arrive during a render of the state they would
// render share it; those that need a newer state wait for it to end and then share the
// next one. A render per request would give every PATCH+GET pair a whole list of its
// own, with its chunks and its garbage, so that a burst of pairs against a large
// inventory costs one render per pair instead of one per change the renders can see.
import type { InventoryRow, Projection } from '../../store/projection.ts';

export type { InventoryRow };

/** What the list is read from, and what tells whether it changed. */
type InventoryListSource = Pick<Projection, 'changeToken' | 'changeTokenNow' | 'inventoryRows'>;

/** Renders the list from its rows, a page at a time. */
export type ListRender<T> = (pages: AsyncIterable<InventoryRow[]>) => Promise<T>;

/** Told of each render, and of each answer that needed none of its own: from memory, or
 * sharing a render under way (the metrics count them). */
interface InventoryCacheCounts {
  hit?: () => void;
  rendered?: () => void;
}

export interface CachedList<T> {
  current(): Promise<T>;
  /** The list held in memory if the store can tell at once that it is current; else
   * undefined (then current() knows). */
  peek(): T | undefined;
}

export function makeInventoryCache<T>(store: InventoryListSource, render: ListRender<T>, counts: InventoryCacheCounts = {}): CachedList<T> {
  let cached: { token: string; body: T } | undefined;
  /** stamp: when its token was asked for (see asked below). */
  let rendering: { token: string; stamp: number; body: Promise<T> } | undefined;
  // Counts requests for the token: a render whose token was asked for after a request
  // arrived shows every change committed before that request, whatever its token.
  let asked = 0;

  const startRender = (token: string, stamp: number): Promise<T> => {
    counts.rendered?.();
    const started = { token, stamp, body: render(store.inventoryRows()) };
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
        if (!rendering) return startRender(token, stamp);
        // An older state is being rendered: wait for it, then look again.
        await rendering.body.catch(() => undefined);
      }
    },
  };
}
