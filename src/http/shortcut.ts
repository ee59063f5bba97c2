// GET /v1/inventory answered before Koa when the request needs nothing but the list held
// in memory: the most frequent request, and the one whose own work is least (the bytes
// are rendered already). Through Koa's chain of middleware it cost some 170 µs of CPU,
// three times what Koa alone costs sending the same bytes; here it costs what its
// answer, its log line and its metrics do.
//
// The request must be a GET of exactly /v1/inventory (no query) with a Host header, no
// If-Match or If-None-Match, no body, a key the store knows from memory, and a list the
// store can tell at once is current; and the app must answer no CORS. Anything else goes
// on to Koa, which answers it as before, and so does a request whose check of the store
// throws. The answer is the one Koa gives (status, headers, body),
// with the same access log line and the same request metrics: a test sends the same
// requests both ways and compares them.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../logger.ts';
import type { Metrics } from '../metrics.ts';
import type { KeyStore } from '../store/keys.ts';
import { logWhenClosed } from './access-log.ts';
import { actorFromMemory } from './auth.ts';
import { CACHE_CONTROL, type InventoryCache } from './inventory-json.ts';
import { requestIdFor } from './request-id.ts';

/** Answers the request and returns true, or returns false having touched nothing. */
export type Shortcut = (req: IncomingMessage, res: ServerResponse) => boolean;

const PATH = '/v1/inventory';

export interface ShortcutDeps {
  keys: Pick<KeyStore, 'verdictNow'>;
  inventory: Pick<InventoryCache, 'peek'>;
  logger: Logger;
  metrics: Pick<Metrics, 'answered'>;
}

export function inventoryShortcut({ keys, inventory, logger, metrics }: ShortcutDeps): Shortcut {
  return (req, res) => {
    if (req.method !== 'GET' || req.url !== PATH) return false;
    const { headers } = req;
    if (headers.host === undefined || headers['if-match'] !== undefined || headers['if-none-match'] !== undefined) return false;
    // Node's parser judges a body (its Transfer-Encoding, its chunks) only after this
    // listener has run, and may refuse the request (400, node-server.ts): answered here,
    // it would have had a 200 first.
    if (headers['transfer-encoding'] !== undefined || (headers['content-length'] ?? '0') !== '0') return false;
    let actor: string | undefined;
    let list: ReturnType<typeof inventory.peek>;
    try {
      actor = actorFromMemory(keys, headers.authorization);
      list = actor === undefined ? undefined : inventory.peek();
    } catch {
      // A store that cannot answer its synchronous check (a closed or failing connection)
      // meets the same failure on Koa's road, which answers, logs and counts it as it does
      // every failure (503 for the store's faults); thrown from this listener, it would
      // end the process.
      return false;
    }
    if (actor === undefined || list === undefined) return false;

    const started = performance.now();
    // Node joins a repeated X-Request-Id into one string, as Koa reads it.
    const given = headers['x-request-id'];
    const requestId = requestIdFor(typeof given === 'string' ? given : undefined);
    logWhenClosed(logger, res, started, () => ({ requestId, actor, method: 'GET', path: PATH }));
    res.once('close', () => metrics.answered('GET', PATH, res, started));
    res.writeHead(200, {
      'X-Request-Id': requestId,
      ETag: list.etag,
      'Cache-Control': CACHE_CONTROL,
      'Content-Type': 'application/json; charset=utf-8',
      'Content-Length': list.body.length,
    });
    res.end(list.body);
    return true;
  };
}
