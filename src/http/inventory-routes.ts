// The two operations of the interface, under /v1, and one extension: reading one entry
// with its version (the ETag a client needs for If-Match). Authentication has already
// happened (ctx.state.actor); a PATCH arrives here with its media type, size, path id and
// body judged, in the order the decisions fix.
import { REQUEST_BUDGET_MS, within } from '../application/deadline.ts';
import type { Context } from 'koa';
import {
  IdempotencyKeyReused,
  IdempotentReplay,
  RefusalStored,
  type CommandHandler,
  type Idempotent,
  type Written,
} from '../application/commands.ts';
import { PetNotTracked, PreconditionFailed } from '../domain/errors.ts';
import type { EventMeta } from '../domain/events.ts';
import type { OpenApiDocument } from '../openapi.ts';
import { IdempotencyKeyInFlight, type IdempotencyStore, type StoredAnswer } from '../store/idempotency.ts';
import { errorBody, HttpError, mapError } from './errors.ts';
import { fingerprintOf, idempotencyKeyOf, makeInFlight } from './idempotency-key.ts';
import { CACHE_CONTROL, itemJson, type InventoryBody, type InventoryCache } from './inventory-json.ts';
import { entryTag, judgeRead, readConditions, setQuantityCommand } from './preconditions.ts';
import { jsonBody as readBody } from './body.ts';
import type { Reply, Route } from './router.ts';
import { pathPetId, validatePatch, type ValidatedPatch } from './validation.ts';
import type { Projection } from '../store/projection.ts';

export interface InventoryDeps {
  store: Pick<Projection, 'loadEntries'>;
  /** GET /v1/inventory's body, held in memory. */
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

export function inventoryRoutes({ store, inventory, commands, openapi, idempotency }: InventoryDeps): Route[] {
  const listAnswer = (ctx: Context, { body, etag }: InventoryBody): Reply => {
    const headers = { ETag: etag, 'Cache-Control': CACHE_CONTROL };
    // Judged here, not by ctx.fresh (see preconditions.ts).
    const verdict = judgeRead(readConditions(ctx.req.headers), etag);
    if (verdict === 'if-match-failed')
      throw new HttpError(412, 'precondition_failed', 'If-Match does not match the current list', { ETag: etag });
    if (verdict === 'not-modified') return { status: 304, headers };
    return { headers, type: 'application/json', body };
  };

  // The list held in memory when the store can tell at once that it is current: no
  // promise, no wait; else the render (shared with the requests that need the same).
  const list: Route['handler'] = (ctx) => {
    const held = inventory.peek();
    if (held) return listAnswer(ctx, held);
    return within(inventory.current(), Date.now() + REQUEST_BUDGET_MS).then((current) => listAnswer(ctx, current));
  };

  // Path id 400, then 404, then the conditions.
  const entry: Route['handler'] = async (ctx) => {
    const petId = pathPetId(ctx.params);
    const found = (await store.loadEntries([petId], { waitUntil: Date.now() + REQUEST_BUDGET_MS })).get(petId);
    if (!found) throw new PetNotTracked(petId);
    const etag = entryTag(found.version);
    const headers = { ETag: etag, 'Cache-Control': CACHE_CONTROL };
    const verdict = judgeRead(readConditions(ctx.req.headers), etag);
    if (verdict === 'if-match-failed') throw new PreconditionFailed(petId, found.version, verdict);
    if (verdict === 'not-modified') return { status: 304, headers };
    return { headers, type: 'application/json', body: itemJson(found) };
  };

  const inFlight = makeInFlight();
  const { records, now, onReplay, onRefused } = idempotency;
  const replay = (answer: StoredAnswer & { receipt?: string | null }): Reply => {
    // In the order the documentation shows them.
    const headers: Record<string, string> = {};
    if (answer.etag !== null) headers.ETag = answer.etag;
    // The original write's receipt: the replay appended nothing.
    if (answer.receipt) headers['Log-Receipt'] = answer.receipt;
    headers['Idempotent-Replayed'] = 'true';
    onReplay?.();
    return { status: answer.status, headers, type: 'application/json', body: answer.body };
  };
  const written = (entry: Written): Reply => {
    const etag = entryTag(entry.version);
    return {
      headers: entry.receipt ? { ETag: etag, 'Log-Receipt': entry.receipt } : { ETag: etag },
      type: 'application/json',
      body: itemJson(entry),
    };
  };
  /** Counts a key refused as reused or in flight, and passes the error on. */
  const refused = (err: unknown): never => {
    if (err instanceof IdempotencyKeyReused) onRefused?.('reused');
    else if (err instanceof IdempotencyKeyInFlight) onRefused?.('in_flight');
    throw err;
  };

  const patch: Route['handler'] = (ctx) => {
    const { petId, quantity } = ctx.state.patch as ValidatedPatch;
    // The request's time on the database starts once its body is in: a slow upload is
    // the client's time, bounded by the server's request timeout.
    const deadline = Date.now() + REQUEST_BUDGET_MS;
    const headers = ctx.req.headers;
    // Judged with the body: a 400 of its own, before the entry is looked at.
    const key = idempotencyKeyOf(headers);
    // The authentication and observe stages in front of this route set both.
    const meta: EventMeta = { actor: ctx.state.actor as string, requestId: ctx.state.requestId as string };
    // The command judges the conditions once it knows the entry: 404 before 412.
    const command = setQuantityCommand(petId, quantity, headers);
    if (key === undefined) return commands.handle(command, meta, undefined, deadline).then(written);
    return withKey(ctx, petId, quantity, key, command, meta, deadline).catch(refused);
  };

  const withKey = async (
    ctx: Context,
    petId: bigint,
    quantity: number,
    key: string,
    command: ReturnType<typeof setQuantityCommand>,
    meta: EventMeta,
    deadline: number,
  ): Promise<Reply> => {
    const headers = ctx.req.headers;
    // The canonical path: /v1/inventory/%37 is the same resource as /v1/inventory/7.
    const path = `/v1/inventory/${petId}`;
    // Scoped to the API key: the same key on another pet differs in its fingerprint (422).
    const scope = { apiKey: meta.actor, key };
    const joined = (value: string | string[] | undefined) => (Array.isArray(value) ? value.join(', ') : value);
    const fingerprint = fingerprintOf({
      method: ctx.method,
      path,
      body: { quantity },
      ifMatch: joined(headers['if-match']),
      ifNoneMatch: joined(headers['if-none-match']),
    });
    // A stored answer is replayed before the entry is looked at; a key another
    // instance's batch holds is in flight there.
    const stored = await within(records.find(scope, new Date(now()).toISOString()), deadline);
    if (stored) {
      if (stored.fingerprint !== fingerprint) throw new IdempotencyKeyReused('the idempotency key was used for another request');
      return replay(stored);
    }
    const release = inFlight.claim(scope);
    if (!release) throw new IdempotencyKeyInFlight();
    // The answer to store is the one the error table gives the refusal: built once, and
    // given as it was stored.
    const answer: Idempotent['answer'] = (result) => {
      if ('entry' in result) return { status: 200, etag: entryTag(result.entry.version), body: itemJson(result.entry) };
      if (!(result.error instanceof PetNotTracked || result.error instanceof PreconditionFailed)) return undefined;
      const error = mapError(result.error, ctx, () => undefined)!;
      return { status: error.status, etag: error.headers.ETag ?? null, body: errorBody(error) };
    };
    try {
      return written(await commands.handle(command, meta, { scope, path, fingerprint, answer }, deadline));
    } catch (err) {
      if (err instanceof IdempotentReplay) return replay(err.record);
      if (err instanceof RefusalStored)
        return {
          status: err.answer.status,
          headers: err.answer.etag === null ? {} : { ETag: err.answer.etag },
          type: 'application/json',
          body: err.answer.body,
        };
      throw err;
    } finally {
      release();
    }
  };

  return [
    { method: 'GET', template: '/v1/inventory', handler: list },
    { method: 'GET', template: '/v1/inventory/:petId', handler: entry },
    { method: 'PATCH', template: '/v1/inventory/:petId', stages: [readBody(), validatePatch(openapi)], handler: patch },
  ];
}
