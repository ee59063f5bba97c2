// The two operations of the interface, under /v1. Authentication has already happened
// (ctx.state.actor); a PATCH arrives here with its media type, size, path id and body
// judged, in the order the decisions fix.
import Router from '@koa/router';
import type { CommandHandler } from '../commands.ts';
import { PetNotTracked, VersionMismatch } from '../domain/errors.ts';
import type { EventMeta } from '../domain/events.ts';
import type { OpenApiDocument } from '../openapi.ts';
import type { InventoryStore } from '../store/port.ts';
import { jsonBody } from './body.ts';
import { HttpError } from './errors.ts';
import { itemJson, makeInventoryCache } from './inventory-json.ts';
import { ifMatch } from './preconditions.ts';
import { validatePatch, type ValidatedPatch } from './validation.ts';

export interface InventoryDeps {
  store: Pick<InventoryStore, 'changeToken' | 'inventoryRows'>;
  commands: CommandHandler;
  openapi: OpenApiDocument;
}

export function inventoryRouter({ store, commands, openapi }: InventoryDeps): Router {
  // sensitive: /V1/Inventory is not this route (auth matches /v1 case-insensitively anyway).
  const router = new Router({ prefix: '/v1', sensitive: true });

  const inventory = makeInventoryCache(store);
  router.get('/inventory', async (ctx) => {
    const { body, etag } = await inventory.current();
    ctx.status = 200;
    ctx.set('ETag', etag);
    ctx.set('Cache-Control', 'private, no-cache');
    if (ctx.fresh) {
      ctx.status = 304;
      return;
    }
    ctx.type = 'application/json';
    ctx.body = body;
  });

  router.patch('/inventory/:petId', jsonBody(), validatePatch(openapi), async (ctx) => {
    const { petId, quantity } = ctx.state.patch as ValidatedPatch;
    const meta: EventMeta = { actor: ctx.state.actor, requestId: ctx.state.requestId };
    const precondition = ifMatch(ctx.get('If-Match'));
    try {
      const entry = await commands.handle({ type: 'SetQuantity', petId, quantity, precondition }, meta);
      ctx.set('ETag', `"${entry.version}"`);
      ctx.type = 'application/json';
      ctx.body = itemJson(entry);
    } catch (err) {
      if (err instanceof PetNotTracked) {
        throw new HttpError(404, 'pet_not_found', `pet ${petId} is not tracked`);
      }
      if (err instanceof VersionMismatch) {
        throw new HttpError(412, 'precondition_failed', `If-Match does not match: pet ${petId} is at version "${err.currentVersion}"`, {
          ETag: `"${err.currentVersion}"`,
        });
      }
      throw err;
    }
  });

  return router;
}
