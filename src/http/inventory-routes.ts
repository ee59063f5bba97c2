// The two operations of the interface, under /v1, and one extension: reading one entry
// with its version (the ETag a client needs for If-Match). Authentication has already
// happened (ctx.state.actor); a PATCH arrives here with its media type, size, path id and
// body judged, in the order the decisions fix.
import Router from '@koa/router';
import { REQUEST_BUDGET_MS, within } from '../deadline.ts';
import { IdempotencyKeyReused, IdempotentReplay, type CommandHandler, type Idempotent } from '../commands.ts';
import { PetNotTracked, PreconditionFailed } from '../domain/errors.ts';
import type { EventMeta } from '../domain/events.ts';
import type { OpenApiDocument } from '../openapi.ts';
import { IdempotencyKeyInFlight, type IdempotencyStore, type StoredAnswer } from '../store/idempotency.ts';
import { jsonBody } from './body.ts';
import { errorBody, HttpError } from './errors.ts';
import { fingerprintOf, idempotencyKeyOf, makeInFlight } from './idempotency-key.ts';
import { CACHE_CONTROL, itemJson, type InventoryCache } from './inventory-json.ts';
import { entryTag, judgeRead, readConditions, setQuantityCommand, weakTagNote } from './preconditions.ts';
import { pathPetId, validatePatch, type ValidatedPatch } from './validation.ts';
import type { Projection } from '../store/projection.ts';

export interface InventoryDeps {
  store: Pick<Projection, 'loadEntries'>;
  /** GET /v1/inventory's body, held in memory (shared with the shortcut, shortcut.ts). */
  inventory: InventoryCache;
  commands: CommandHandler;
  openapi: OpenApiDocument;
  idempotency: {
    records: IdempotencyStore;
    now: () => number;
    /** A stored answer was given again; a key was refused as reused or in flight. */
    onReplay?: () => void;
    onRefused?: (why: 'reused' | 'in_flight') => void;
  };
}

export function inventoryRouter({ store, inventory, commands, openapi, idempotency }: InventoryDeps): Router {
  // sensitive: /V1/Inventory is not this route (auth matches /v1 case-insensitively anyway).
  // strict: paths are exact, /v1/inventory/7/ is not /v1/inventory/7.
  const router = new Router({ prefix: '/v1', sensitive: true, strict: true });

  router.get('/inventory', async (ctx) => {
    const { body, etag } = await within(inventory.current(), Date.now() + REQUEST_BUDGET_MS);
    ctx.status = 200;
    ctx.set('ETag', etag);
    ctx.set('Cache-Control', CACHE_CONTROL);
    // Judged here, not by ctx.fresh (see preconditions.ts).
    const verdict = judgeRead(readConditions(ctx.req.headers), etag);
    if (verdict === 'if-match-failed') {
      throw new HttpError(412, 'precondition_failed', 'If-Match does not match the current list', { ETag: etag });
    }
    if (verdict === 'not-modified') {
      ctx.status = 304;
      return;
    }
    ctx.type = 'application/json';
    ctx.body = body;
  });

  // GET (and HEAD, which the router adds): path id 400, then 404, then the conditions.
  router.get('/inventory/:petId', async (ctx) => {
    const petId = pathPetId(ctx.params);
    const entry = (await store.loadEntries([petId], { waitUntil: Date.now() + REQUEST_BUDGET_MS })).get(petId);
    if (!entry) throw new HttpError(404, 'pet_not_found', `pet ${petId} is not tracked`);
    const etag = entryTag(entry.version);
    ctx.set('ETag', etag);
    ctx.set('Cache-Control', CACHE_CONTROL);
    const conditions = readConditions(ctx.req.headers);
    const verdict = judgeRead(conditions, etag);
    if (verdict === 'if-match-failed') {
      const message = `If-Match does not match: pet ${petId} is at version ${etag}${weakTagNote(conditions)}`;
      throw new HttpError(412, 'precondition_failed', message, { ETag: etag });
    }
    if (verdict === 'not-modified') {
      ctx.status = 304;
      return;
    }
    ctx.type = 'application/json';
    ctx.body = itemJson(entry);
  });

  const inFlight = makeInFlight();
  const replay = (ctx: Parameters<Parameters<typeof router.patch>[2]>[0], answer: StoredAnswer & { receipt?: string | null }) => {
    ctx.status = answer.status;
    if (answer.etag !== null) ctx.set('ETag', answer.etag);
    // The original write's receipt: the replay appended nothing.
    if (answer.receipt) ctx.set('Log-Receipt', answer.receipt);
    ctx.set('Idempotent-Replayed', 'true');
    ctx.type = 'application/json';
    ctx.body = answer.body;
    idempotency.onReplay?.();
  };

  router.patch('/inventory/:petId', jsonBody(), validatePatch(openapi), async (ctx) => {
    const { petId, quantity } = ctx.state.patch as ValidatedPatch;
    // The request's time on the database starts once its body is in: a slow upload is
    // the client's time, bounded by the server's request timeout.
    const deadline = Date.now() + REQUEST_BUDGET_MS;
    // Judged with the body: a 400 of its own, before the entry is looked at.
    const key = idempotencyKeyOf(ctx.req.headers);
    // The authentication and request-id middleware in front of this route set both.
    const meta: EventMeta = { actor: ctx.state.actor as string, requestId: ctx.state.requestId as string };
    // The command judges the conditions once it knows the entry: 404 before 412.
    const command = setQuantityCommand(petId, quantity, ctx.req.headers);
    const refusal = (err: unknown): HttpError | undefined => {
      if (err instanceof PetNotTracked) {
        return new HttpError(404, 'pet_not_found', `pet ${petId} is not tracked`);
      }
      if (err instanceof PreconditionFailed) {
        const current = entryTag(err.currentVersion);
        const message =
          err.failed === 'if-none-match-failed'
            ? `If-None-Match matches or cannot be read: pet ${petId} is at version ${current}`
            : `If-Match does not match: pet ${petId} is at version ${current}${weakTagNote(readConditions(ctx.req.headers))}`;
        return new HttpError(412, 'precondition_failed', message, { ETag: current });
      }
      return undefined;
    };

    let idempotent: Idempotent | undefined;
    let release: (() => void) | undefined;
    if (key !== undefined) {
      // The canonical path: /v1/inventory/%37 is the same resource as /v1/inventory/7.
      const path = `/v1/inventory/${petId}`;
      // Scoped to the API key: the same key on another pet differs in its fingerprint (422).
      const scope = { apiKey: meta.actor, key };
      const header = (name: string) => {
        const value = ctx.req.headers[name];
        return Array.isArray(value) ? value.join(', ') : value;
      };
      const fingerprint = fingerprintOf({
        method: ctx.method,
        path,
        body: { quantity },
        ifMatch: header('if-match'),
        ifNoneMatch: header('if-none-match'),
      });
      // A stored answer is replayed before the entry is looked at; a key another
      // instance's batch holds is in flight there.
      const stored = await within(idempotency.records.find(scope, new Date(idempotency.now()).toISOString()), deadline).catch(
        (err: unknown) => {
          throw err instanceof IdempotencyKeyInFlight ? inFlightError(idempotency.onRefused) : err;
        },
      );
      if (stored) {
        if (stored.fingerprint !== fingerprint) throw reused(idempotency.onRefused);
        return replay(ctx, stored);
      }
      release = inFlight.claim(scope);
      if (!release) throw inFlightError(idempotency.onRefused);
      idempotent = {
        scope,
        path,
        fingerprint,
        answer: (result) => {
          if ('entry' in result) return { status: 200, etag: entryTag(result.entry.version), body: itemJson(result.entry) };
          const error = refusal(result.error);
          return error && { status: error.status, etag: error.headers.ETag ?? null, body: errorBody(error) };
        },
      };
    }
    try {
      const entry = await commands.handle(command, meta, idempotent, deadline);
      ctx.set('ETag', entryTag(entry.version));
      if (entry.receipt) ctx.set('Log-Receipt', entry.receipt);
      ctx.type = 'application/json';
      ctx.body = itemJson(entry);
    } catch (err) {
      if (err instanceof IdempotentReplay) return replay(ctx, err.record);
      if (err instanceof IdempotencyKeyReused) throw reused(idempotency.onRefused);
      if (err instanceof IdempotencyKeyInFlight) throw inFlightError(idempotency.onRefused);
      throw refusal(err) ?? err;
    } finally {
      release?.();
    }
  });

  return router;
}

/** Another request with the key is being processed (here, or in another instance's batch). */
function inFlightError(onRefused?: (why: 'in_flight') => void): HttpError {
  onRefused?.('in_flight');
  return new HttpError(
    409,
    'idempotency_key_in_flight',
    'a request with this Idempotency-Key is still being processed; retry after its answer',
    { 'Retry-After': '1' },
  );
}

function reused(onRefused?: (why: 'reused') => void): HttpError {
  onRefused?.('reused');
  return new HttpError(
    422,
    'idempotency_key_reused',
    'this Idempotency-Key was used for another request (another body, path or precondition): use a new key for a new request',
  );
}
