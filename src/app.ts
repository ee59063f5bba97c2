// Builds the Koa application from its dependencies; it does not listen (server.ts does).
// Every request takes the same stages, composed once: observe (request id, access log,
// metrics) -> error boundary -> whole requests (framing judged, a body no route reads read
// first) -> CORS grant (when configured: Vary, actual requests) -> Host present -> CORS
// preflights -> auth and the key's fair share (under /v1) -> the router (http/router.ts: the route table below;
// 404, 405 and OPTIONS) -> the route's body and validation (PATCH) -> handler -> command
// (decide, preconditions, append + project in one transaction) -> answer.
import Koa, { type Middleware } from 'koa';
import compose from 'koa-compose';
import { makeCommandHandler } from './application/write/commands.ts';
import { makeCommitSignal } from './application/write/commit-signal.ts';
import { entryReads } from './application/read/entry-reads.ts';
import { makeInventoryCache } from './application/read/inventory-cache.ts';
import { idempotentCommands } from './application/write/idempotency.ts';
import { keepingCheckpoints, makeCheckpoints } from './application/signing/checkpoints.ts';
import { appErrorLog } from './http/stages/app-errors.ts';
import { auditRoutes } from './http/routes/audit-routes.ts';
import { bearerAuth } from './http/stages/auth.ts';
import { BODY_LIMIT_BYTES } from './http/input/body.ts';
import { wholeRequests } from './http/stages/framing.ts';
import { keyFairness } from './http/stages/key-fairness.ts';
import { corsStages } from './http/stages/cors.ts';
import { docsRoutes } from './http/routes/docs-routes.ts';
import { eventsRoutes } from './http/routes/events-routes.ts';
import { makeFeed, type Feed } from './http/routes/feed-hub.ts';
import { errorBoundary } from './http/stages/errors.ts';
import { requireHost } from './http/stages/host.ts';
import { inventoryListRender } from './http/routes/inventory-json.ts';
import { inventoryRoutes } from './http/routes/inventory-routes.ts';
import { logRoutes } from './http/routes/log-routes.ts';
import { operationsRoutes } from './http/routes/operations-routes.ts';
import { metricsObserver } from './http/stages/metrics-observer.ts';
import { observe } from './http/stages/observe.ts';
import { makeRouter, underPrefix, type Route } from './http/routes/router.ts';
import { tileRoutes } from './http/routes/tile-routes.ts';
import { makeTileReads } from './application/read/tiles.ts';
import type { Logger } from './support/logger.ts';
import { makeMetrics, type Metrics } from './application/health/metrics.ts';
import { loadOpenApi, type OpenApiDocument } from './openapi.ts';
import type { Signer } from './support/signing.ts';
import type { InventoryStore } from './store/port.ts';
import { makeStorageHealth, type StorageHealth } from './application/health/storage-health.ts';

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
  /** Requests one key may have in flight (MAX_REQUESTS_PER_KEY); 64 when not given. */
  maxRequestsPerKey?: number;
  /** Signs the log's heads; the store opened with the same key signs the receipts. */
  signer?: Signer;
  /** Told of each tree the signer published (the server keeps them beside its key file). */
  onPublished?: (logId: string, size: number, root: Buffer) => void;
  /** Stages every request takes right after CORS, before authentication (tests show that
   * a stage added here is on every route and every other answer). */
  stages?: Middleware[];
}

/** The application's services the routes use, wired to this process's commits. */
function applicationServices(
  deps: Required<Pick<AppDeps, 'store' | 'logger' | 'now' | 'metrics' | 'feed'>> &
    Pick<AppDeps, 'idempotencyTtlMs' | 'signer' | 'onPublished'>,
) {
  const { store, logger, now, metrics, feed, idempotencyTtlMs, signer, onPublished } = deps;
  const storage = makeStorageHealth(store, {
    now,
    onMismatch: (mismatch) => logger.error({ code: 'chain_head_mismatch' }, mismatch.message),
  });
  // What reacts to this process's commits subscribes to one signal.
  const commit = makeCommitSignal();
  commit.subscribe(() => storage.succeeded());
  commit.subscribe(() => feed.committed());
  const checkpoints = makeCheckpoints({ store, now, ...(signer ? { signer } : {}), ...(onPublished ? { onPublished } : {}) });
  const commands = makeCommandHandler({
    // The checkpoints the batches signed are kept as they commit: a size is signed once.
    store: keepingCheckpoints(store, checkpoints),
    now,
    onCommit: commit.emit,
    onAppended: (submissions, seconds, types) => metrics.committed(submissions, seconds, types),
    // Requests answered commit_unconfirmed: what their batch did, once the database can tell.
    onCommitOutcome: ({ requestIds, outcome }) => {
      for (const requestId of requestIds) logger.warn({ requestId, outcome }, 'outcome of a commit that was answered as unconfirmed');
    },
    ...(idempotencyTtlMs === undefined ? {} : { idempotencyTtlMs }),
  });
  const inventory = makeInventoryCache(store, inventoryListRender(), {
    hit: () => metrics.listServedFromCache(),
    rendered: () => metrics.listRendered(),
  });
  return { storage, checkpoints, commands, inventory };
}

/** The stages every request takes, composed once, the router last. */
function requestStages(
  routes: Route[],
  {
    store,
    logger,
    metrics,
    storage,
    corsOrigins,
    stages,
    maxRequestsPerKey,
    openapi,
  }: Required<Pick<AppDeps, 'store' | 'logger' | 'metrics' | 'corsOrigins' | 'stages' | 'maxRequestsPerKey'>> & {
    storage: StorageHealth;
    openapi: OpenApiDocument;
  },
): Middleware {
  const router = makeRouter(routes, openapi);
  // Only the routes of these methods read a body; the others' is read before them.
  const bodyMethods = new Set<string>(routes.map((route) => route.method).filter((method) => method !== 'GET'));
  const cors = corsOrigins.length > 0 ? corsStages(corsOrigins, (ctx) => router.templateOf(ctx) !== undefined) : undefined;
  return compose([
    observe(logger, metricsObserver(metrics), router.templateOf),
    errorBoundary(logger, {
      fault: (error) => store.fault(error),
      onUnavailable: (error) => {
        storage.failed(error);
        metrics.unavailable(error);
      },
    }),
    wholeRequests((ctx) => bodyMethods.has(ctx.method), BODY_LIMIT_BYTES),
    ...(cors ? [cors.grant] : []),
    requireHost(),
    ...(cors ? [cors.preflight] : []),
    ...stages,
    underPrefix('/v1', compose([bearerAuth(store.keys, logger, router.methodUnserved), keyFairness(maxRequestsPerKey)])),
    router.routes,
  ]);
}

export function buildApp({
  store,
  logger,
  now = Date.now,
  accepting = () => true,
  corsOrigins = [],
  metrics = makeMetrics({ store }),
  feed = makeFeed({ store, logger, registry: metrics.registry }),
  idempotencyTtlMs,
  maxRequestsPerKey = 64,
  signer,
  onPublished,
  stages = [],
}: AppDeps): Koa {
  const { text: openapiText, doc: openapi } = loadOpenApi();
  const services = { store, logger, now, metrics, feed, idempotencyTtlMs, signer, onPublished };
  const { storage, checkpoints, commands, inventory } = applicationServices(services);
  const routes = [
    ...operationsRoutes({ storage, openapiText, accepting, metrics: metrics.registry }),
    ...docsRoutes(),
    ...auditRoutes({ store }),
    ...inventoryRoutes({
      entries: entryReads(store),
      inventory,
      commands,
      keyed: idempotentCommands({
        commands,
        records: store.idempotency,
        now,
        onReplay: () => metrics.idempotency('replayed'),
        onRefused: (why) => metrics.idempotency(why),
      }),
      openapi,
    }),
    ...logRoutes({ store, checkpoints, now, ...(signer ? { signer } : {}) }),
    ...tileRoutes({ tiles: makeTileReads(store) }),
    ...eventsRoutes({ store, feed, openapi }),
  ];

  const app = new Koa();
  // Without a listener Koa prints these raw on standard error, outside the JSON log.
  app.on('error', appErrorLog(logger, { clientAborted: () => metrics.clientAborted() }));
  app.use(requestStages(routes, { store, logger, metrics, storage, corsOrigins, stages, maxRequestsPerKey, openapi }));
  return app;
}
