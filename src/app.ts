// Builds the Koa application from its dependencies; it does not listen (server.ts does).
// The app carries its shortcut (http/shortcut.ts), which the node:http server tries
// before Koa: the plain GET /v1/inventory of a known key, answered from memory as the
// road below would answer it. The middleware order is the data's one road:
// metrics -> errors -> request id -> access log -> Host present -> CORS (answers preflights) -> auth
// (/v1) -> routes (media type, size, path id, body) -> command (decide, preconditions,
// append + project in one transaction) -> response.
import Koa from 'koa';
import { makeCommandHandler } from './commands.ts';
import { makeCommitSignal } from './commit-signal.ts';
import { accessLog } from './http/access-log.ts';
import { appErrorLog } from './http/app-errors.ts';
import { bearerAuth, under } from './http/auth.ts';
import { corsFor, servedBy } from './http/cors.ts';
import { docsRouter } from './http/docs-routes.ts';
import { eventsRouter } from './http/events-routes.ts';
import { makeFeed, type Feed } from './feed/hub.ts';
import { errorHandler } from './http/errors.ts';
import { requireHost } from './http/host.ts';
import { makeInventoryCache } from './http/inventory-json.ts';
import { inventoryRouter } from './http/inventory-routes.ts';
import { logRouter } from './http/log-routes.ts';
import { operationsRouter } from './http/operations-routes.ts';
import { allowedMethods } from './http/options.ts';
import { requestId } from './http/request-id.ts';
import { inventoryShortcut, type Shortcut } from './http/shortcut.ts';
import type { Logger } from './logger.ts';
import { makeMetrics, type Metrics } from './metrics.ts';
import { loadOpenApi } from './openapi.ts';
import type { Signer } from './signing.ts';
import type { InventoryStore } from './store/port.ts';
import { makeStorageHealth } from './storage-health.ts';

interface AppDeps {
  /** The storage port: nothing here knows which database is behind it. */
  store: InventoryStore;
  logger: Logger;
  now?: () => number;
  /** False once the service is shutting down: /readyz then answers 503. */
  accepting?: () => boolean;
  /** Origins allowed by CORS (CORS_ORIGINS); none: no CORS at all. */
  corsOrigins?: readonly string[];
  /** What GET /metrics shows; by default a registry of this app's own, without
   * prom-client's process metrics (the server turns those on). */
  metrics?: Metrics;
  /** The change feed's streams (the server ends them at shutdown); by default its own. */
  feed?: Feed;
  /** How long the answer of a PATCH with an Idempotency-Key is kept (IDEMPOTENCY_TTL_HOURS). */
  idempotencyTtlMs?: number;
  /** Signs the log's heads; the store opened with the same key signs the receipts. */
  signer?: Signer;
}

/** The Koa app, with the requests it may answer before Koa (see above). */
export type ServiceApp = Koa & { shortcut?: Shortcut };

export function buildApp({
  store,
  logger,
  now = Date.now,
  accepting = () => true,
  corsOrigins = [],
  metrics = makeMetrics({ store }),
  feed = makeFeed({ store, logger, registry: metrics.registry }),
  idempotencyTtlMs,
  signer,
}: AppDeps): ServiceApp {
  const { text: openapiText, doc: openapi } = loadOpenApi();
  const storage = makeStorageHealth(store, { now });
  // What reacts to this process's commits subscribes to one signal.
  const commit = makeCommitSignal();
  commit.subscribe(() => storage.succeeded());
  commit.subscribe(() => feed.committed());
  const commands = makeCommandHandler({
    store,
    now,
    onCommit: commit.emit,
    onAppended: (submissions, seconds, types) => metrics.committed(submissions, seconds, types),
    // Requests answered commit_unconfirmed: what their batch did, once the database can tell.
    onCommitOutcome: ({ requestIds, outcome }) => {
      for (const requestId of requestIds) logger.warn({ requestId, outcome }, 'outcome of a commit that was answered as unconfirmed');
    },
    ...(idempotencyTtlMs === undefined ? {} : { idempotencyTtlMs }),
  });
  const inventory = makeInventoryCache(store, { hit: () => metrics.listServedFromCache(), rendered: () => metrics.listRendered() });
  const routers = [
    operationsRouter({ storage, openapiText, accepting, metrics: metrics.registry }),
    docsRouter(),
    inventoryRouter({
      store,
      inventory,
      commands,
      openapi,
      idempotency: {
        records: store.idempotency,
        now,
        onReplay: () => metrics.idempotency('replayed'),
        onRefused: (why) => metrics.idempotency(why),
      },
    }),
    logRouter({ store, now, signer }),
    eventsRouter({ store, feed }),
  ];

  const app: ServiceApp = new Koa();
  // Without a listener Koa prints these raw on standard error, outside the JSON log.
  app.on('error', appErrorLog(logger, { clientAborted: () => metrics.clientAborted() }));
  app.use(metrics.middleware(routers));
  app.use(
    errorHandler(logger, {
      fault: (error) => store.fault(error),
      onUnavailable: (error) => {
        storage.failed(error);
        metrics.unavailable(error);
      },
    }),
  );
  app.use(requestId());
  app.use(accessLog(logger));
  app.use(requireHost());
  if (corsOrigins.length > 0) app.use(corsFor(corsOrigins, servedBy(routers)));
  app.use(under('/v1', bearerAuth(store.keys, logger)));
  for (const router of routers) {
    app.use(router.routes());
    app.use(allowedMethods(router));
  }
  // With CORS the answer depends on the Origin (and says Vary: Origin): Koa's road only.
  if (corsOrigins.length === 0) app.shortcut = inventoryShortcut({ keys: store.keys, inventory, logger, metrics });
  return app;
}
