// The two operations of the interface, under /v1, and one extension: reading one entry
// with its version (the ETag a client needs for If-Match). Authentication has already
// happened (ctx.state.actor); a PATCH arrives here with its media type, size, path id and
// body judged, in the order the decisions fix.
import Router from '@koa/router';
import type { CommandHandler } from '../commands.ts';
import { PetNotTracked, VersionMismatch } from '../domain/errors.ts';
import type { EventMeta } from '../domain/events.ts';
import type { OpenApiDocument } from '../openapi.ts';
import type { InventoryStore } from '../store/port.ts';
import { jsonBody } from './body.ts';
import { HttpError } from './errors.ts';
import { itemJson, makeInventoryCache, type InventoryCacheCounts } from './inventory-json.ts';
import { hasConditions, judgeRead, judgeWrite, readConditions, weakTagNote } from './preconditions.ts';
import { pathPetId, validatePatch, type ValidatedPatch } from './validation.ts';

export interface InventoryDeps {
  store: Pick<InventoryStore, 'changeToken' | 'inventoryRows' | 'loadEntries'>;
  commands: CommandHandler;
  openapi: OpenApiDocument;
  cacheCounts?: InventoryCacheCounts;
}

export function inventoryRouter({ store, commands, openapi, cacheCounts }: InventoryDeps): Router {
  // sensitive: /V1/Inventory is not this route (auth matches /v1 case-insensitively anyway).
  // strict: paths are exact, /v1/inventory/7/ is not /v1/inventory/7.
  const router = new Router({ prefix: '/v1', sensitive: true, strict: true });

  const inventory = makeInventoryCache(store, cacheCounts);
  router.get('/inventory', async (ctx) => {
    const { body, etag } = await inventory.current();
    ctx.status = 200;
    ctx.set('ETag', etag);
    ctx.set('Cache-Control', 'private, no-cache');
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
    const entry = (await store.loadEntries([petId])).get(petId);
    if (!entry) throw new HttpError(404, 'pet_not_found', `pet ${petId} is not tracked`);
    const etag = `"${entry.version}"`;
    ctx.set('ETag', etag);
    ctx.set('Cache-Control', 'private, no-cache');
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

  router.patch('/inventory/:petId', jsonBody(), validatePatch(openapi), async (ctx) => {
    const { petId, quantity } = ctx.state.patch as ValidatedPatch;
    // The authentication and request-id middleware in front of this route set both.
    const meta: EventMeta = { actor: ctx.state.actor as string, requestId: ctx.state.requestId as string };
    // The command judges the conditions once it knows the entry: 404 before 412.
    const conditions = readConditions(ctx.req.headers);
    const tagOf = (version: number) => `"${version}"`;
    const precondition = hasConditions(conditions) ? (version: number) => judgeWrite(conditions, tagOf(version)) === 'proceed' : undefined;
    try {
      const entry = await commands.handle({ type: 'SetQuantity', petId, quantity, precondition }, meta);
      ctx.set('ETag', tagOf(entry.version));
      ctx.type = 'application/json';
      ctx.body = itemJson(entry);
    } catch (err) {
      if (err instanceof PetNotTracked) {
        throw new HttpError(404, 'pet_not_found', `pet ${petId} is not tracked`);
      }
      if (err instanceof VersionMismatch) {
        const current = tagOf(err.currentVersion);
        const failed =
          judgeWrite(conditions, current) === 'if-none-match-failed'
            ? 'If-None-Match matches or cannot be read'
            : 'If-Match does not match';
        const note = failed.startsWith('If-Match') ? weakTagNote(conditions) : '';
        const message = `${failed}: pet ${petId} is at version ${current}${note}`;
        throw new HttpError(412, 'precondition_failed', message, { ETag: current });
      }
      throw err;
    }
  });

  return router;
}
