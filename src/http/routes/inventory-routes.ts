// The two operations of the interface, under /v1, and one extension: reading one entry
// with its version (the ETag a client needs for If-Match). Authentication has already
// happened (ctx.state.actor); a handler is given its path id judged, and a PATCH its
// media type, size, body and Idempotency-Key too, in the order the decisions fix.
import { REQUEST_BUDGET_MS, byDeadline } from '../../application/write/deadline.ts';
import type { Context } from 'koa';
import type { CommandHandler } from '../../application/write/commands.ts';
import type { CommandResult, Idempotent, Written } from '../../application/write/command-result.ts';
import type { EntryReads } from '../../application/read/entry-reads.ts';
import type { IdempotentCommands, StoredAnswer } from '../../application/write/idempotency.ts';
import type { EventMeta } from '../../domain/events.ts';
import type { OpenApiDocument } from '../../openapi.ts';
import { errorBody, HttpError, refusalAnswer } from '../stages/errors.ts';
import { fingerprintOf } from '../input/idempotency-key.ts';
import { CACHE_CONTROL, itemJson, type InventoryBody, type InventoryCache } from './inventory-json.ts';
import { entryTag, judgeRead, readConditions, setQuantityCommand } from '../input/preconditions.ts';
import { jsonBody as readBody } from '../input/body.ts';
import { withInput, type Reply, type Route } from './router.ts';
import { entryInput, entryRules, patchInput, type ValidatedPatch } from '../input/validation.ts';
import { actorOf, requestIdOf } from '../stages/request-state.ts';

export interface InventoryDeps {
  entries: EntryReads;
  /** GET /v1/inventory's body, held in memory. */
  inventory: InventoryCache;
  commands: CommandHandler;
  /** The commands of requests sent with an Idempotency-Key. */
  keyed: IdempotentCommands;
  openapi: OpenApiDocument;
}

export function inventoryRoutes({ entries, inventory, commands, keyed, openapi }: InventoryDeps): Route[] {
  const listAnswer = (ctx: Context, { body, etag, headers }: InventoryBody): Reply => {
    const request = ctx.req.headers;
    // Judged here, not by ctx.fresh (see preconditions.ts).
    if (request['if-match'] !== undefined || request['if-none-match'] !== undefined) {
      const verdict = judgeRead(readConditions(request), etag);
      if (verdict === 'if-match-failed')
        throw new HttpError(412, 'precondition_failed', 'If-Match does not match the current list', { ETag: etag });
      if (verdict === 'not-modified') return { status: 304, headers: { ETag: etag, 'Cache-Control': CACHE_CONTROL } };
    }
    return { headers, body };
  };

  // The list held in memory when the store can tell at once that it is current: no
  // promise, no wait; else the render (shared with the requests that need the same).
  const list: Route['handler'] = (ctx) => {
    const held = inventory.peek();
    if (held) return listAnswer(ctx, held);
    return byDeadline(inventory.current(), Date.now() + REQUEST_BUDGET_MS).then((current) => listAnswer(ctx, current));
  };

  // Path id 400 (judged before), then 404, then the conditions.
  const entry = async (ctx: Context, petId: bigint): Promise<Reply> => {
    const found = await entries.entry(petId, Date.now() + REQUEST_BUDGET_MS);
    if (!found) throw refusalAnswer({ reason: 'not_tracked', petId }, ctx);
    const etag = entryTag(found.version);
    const headers = { ETag: etag, 'Cache-Control': CACHE_CONTROL };
    const verdict = judgeRead(readConditions(ctx.req.headers), etag);
    if (verdict === 'if-match-failed')
      throw refusalAnswer({ reason: 'precondition_failed', petId, currentVersion: found.version, failed: verdict }, ctx);
    if (verdict === 'not-modified') return { status: 304, headers };
    return { headers, type: 'application/json', body: itemJson(found) };
  };

  const patch = (ctx: Context, { petId, quantity, key }: ValidatedPatch): Promise<Reply> => {
    // The key was judged with the body: a 400 of its own, before the entry is looked at.
    // The request's time on the database starts once its body is in: a slow upload is
    // the client's time, bounded by the server's request timeout.
    const deadline = Date.now() + REQUEST_BUDGET_MS;
    const headers = ctx.req.headers;
    // The authentication and observe stages in front of this route set both.
    const meta: EventMeta = { actor: actorOf(ctx), requestId: requestIdOf(ctx) };
    // The command judges the conditions once it knows the entry: 404 before 412.
    const command = setQuantityCommand(petId, quantity, headers);
    const answer = (result: CommandResult) => answerOf(result, ctx);
    if (key === undefined) return commands.handle(command, meta, undefined, deadline).then(answer);
    return keyed.handle(command, meta, keyedRequest(ctx, petId, quantity, key, meta), deadline).then(answer);
  };

  return [
    { method: 'GET', template: '/v1/inventory', operation: 'listInventory', handler: list },
    {
      method: 'GET',
      template: '/v1/inventory/:petId',
      operation: 'getInventoryItem',
      rules: entryRules(openapi, 'GET'),
      handler: withInput(entryInput, entry),
    },
    {
      method: 'PATCH',
      template: '/v1/inventory/:petId',
      operation: 'updateInventory',
      rules: entryRules(openapi, 'PATCH'),
      reads: [readBody()],
      handler: withInput(patchInput(openapi), patch),
    },
  ];
}

/** What a PATCH with an Idempotency-Key is, and how its answers are stored. */
function keyedRequest(ctx: Context, petId: bigint, quantity: number, key: string, meta: EventMeta): Idempotent {
  const headers = ctx.req.headers;
  // The canonical path: /v1/inventory/%37 is the same resource as /v1/inventory/7.
  const path = `/v1/inventory/${petId}`;
  const joined = (value: string | string[] | undefined) => (Array.isArray(value) ? value.join(', ') : value);
  return {
    // Scoped to the API key: the same key on another pet differs in its fingerprint (422).
    scope: { apiKey: meta.actor, key },
    path,
    fingerprint: fingerprintOf({
      method: ctx.method,
      path,
      body: { quantity },
      ifMatch: joined(headers['if-match']),
      ifNoneMatch: joined(headers['if-none-match']),
    }),
    // The answer stored is the one the error table gives the refusal: built once, and
    // given as it was stored.
    answers: {
      applied: (entry) => ({ status: 200, etag: entryTag(entry.version), body: itemJson(entry) }),
      refused: (refusal) => {
        const error = refusalAnswer(refusal, ctx);
        return { status: error.status, etag: error.headers.ETag ?? null, body: errorBody(error) };
      },
    },
  };
}

function replay(answer: StoredAnswer & { receipt?: string | null }): Reply {
  // In the order the documentation shows them.
  const headers: Record<string, string> = {};
  if (answer.etag !== null) headers.ETag = answer.etag;
  // The original write's receipt: the replay appended nothing.
  if (answer.receipt) headers['Log-Receipt'] = answer.receipt;
  headers['Idempotent-Replayed'] = 'true';
  return { status: answer.status, headers, type: 'application/json', body: answer.body };
}

function written(entry: Written): Reply {
  const etag = entryTag(entry.version);
  return {
    headers: entry.receipt ? { ETag: etag, 'Log-Receipt': entry.receipt } : { ETag: etag },
    type: 'application/json',
    body: itemJson(entry),
  };
}

/** The answer to a PATCH, whatever its command came to: a refusal whose answer was not
 * stored is answered by the error table. */
function answerOf(result: CommandResult, ctx: Context): Reply {
  switch (result.kind) {
    case 'applied':
      return written(result.entry);
    case 'replayed':
      return replay(result.record);
    case 'refused': {
      if (!result.answer) throw refusalAnswer(result.refusal, ctx);
      const { status, etag, body } = result.answer;
      return { status, headers: etag === null ? {} : { ETag: etag }, type: 'application/json', body };
    }
    default:
      return result satisfies never;
  }
}
