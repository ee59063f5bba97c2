// Every request parameter is judged by its schema in the OpenAPI document, compiled at
// start: a copy of the document with another rule refuses other values; an integer
// parameter is judged as its text, never coerced (007, 1e3, +7, 0x10 and a number past
// int64 are refused as they are written), on every parameter that holds a number, on
// every store; and what a schema lets through is not refused for its shape.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Context } from 'koa';
import { auditRoutes } from '../../src/http/routes/audit-routes.ts';
import { feedInput, feedRules } from '../../src/http/input/feed-query.ts';
import { operationJudge, type InputRules, type JudgedParameters } from '../../src/http/input/operation-input.ts';
import { textSchemaOf } from '../../src/http/input/text-schemas.ts';
import { entryInput, entryRules, patchInput } from '../../src/http/input/validation.ts';
import { loadOpenApi, type OpenApiDocument } from '../../src/openapi.ts';
import { assertErrorShape } from '../kit/http.ts';
import { appSuite } from '../kit/suites.ts';

// The document's JSON, reached into by the tests that change it.
/* eslint-disable @typescript-eslint/no-explicit-any, @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-argument */
type Doc = Record<string, any>;

/** A copy of the service's document, changed by `change`. */
function documentWith(change: (doc: Doc) => void): OpenApiDocument & Doc {
  const { doc } = loadOpenApi();
  change(doc);
  return doc;
}

/** A request as the stages read it: its path's parameters, query and headers. */
function requestOf(request: {
  params?: Record<string, string>;
  query?: Record<string, string>;
  headers?: Record<string, string>;
}): Context {
  const headers = Object.fromEntries(Object.entries(request.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]));
  return {
    method: 'GET',
    params: request.params ?? {},
    query: request.query ?? {},
    req: { headers },
    get: (name: string) => headers[name.toLowerCase()] ?? '',
    state: { body: { kind: 'parsed', value: { quantity: 3 }, node: { kind: 'object', members: new Map() } } },
  } as unknown as Context;
}

/** What a route's operation and input make of a request: the error it refuses it with,
 * or the input its handler is given. */
function judge<I>(
  doc: OpenApiDocument,
  route: { method: 'GET' | 'PATCH'; template: string; operation: string; rules?: InputRules },
  input: (parameters: JudgedParameters, ctx: Context) => I,
  ctx: Context,
): { code?: string; message?: string; input?: I } {
  try {
    return { input: input(operationJudge(doc, route, route.rules)(ctx), ctx) };
  } catch (error) {
    return { code: (error as { code?: string }).code ?? (error as Error).name, message: (error as Error).message };
  }
}

const ENTRY = '/v1/inventory/:petId';
const entryRead = (doc: OpenApiDocument) => ({
  method: 'GET' as const,
  template: ENTRY,
  operation: 'getInventoryItem',
  rules: entryRules(doc, 'GET'),
});
const entryPatch = (doc: OpenApiDocument) => ({
  method: 'PATCH' as const,
  template: ENTRY,
  operation: 'updateInventory',
  rules: entryRules(doc, 'PATCH'),
});
const events = (doc: OpenApiDocument) => ({
  method: 'GET' as const,
  template: '/v1/events',
  operation: 'followEvents',
  rules: feedRules(doc),
});
const adjustments = () => auditRoutes({ store: {} as never }).find((r) => r.operation === 'listStockAdjustments')!;

test("the pet id's bounds are the document's: a copy with a maximum of 100 refuses 101 on GET and PATCH", () => {
  const doc = documentWith((d) => (d.components.parameters.PetId.schema.maximum = 100));
  const judges = [
    (ctx: Context) => judge(doc, entryRead(doc), entryInput, ctx),
    (ctx: Context) => judge(doc, entryPatch(doc), (p, c) => patchInput(doc)(p, c).petId, ctx),
  ];
  for (const judged of judges) {
    const refused = judged(requestOf({ params: { petId: '101' } }));
    assert.is(refused.code, 'invalid_pet_id');
    assert.match(refused.message ?? '', 'from 1 to 100', 'the refusal says the bounds of the document');
    const { code, input } = judged(requestOf({ params: { petId: '100' } }));
    assert.is(code, undefined);
    assert.is(input, 100n);
  }
  const served = loadOpenApi().doc;
  assert.is(judge(served, entryRead(served), entryInput, requestOf({ params: { petId: '101' } })).code, undefined);
});

test("Idempotency-Key's grammar is the document's pattern", () => {
  const doc = documentWith((d) => (d.components.parameters.IdempotencyKey.schema.pattern = '^[a-z]+$'));
  const served = loadOpenApi().doc;
  const sent = (key: string) => requestOf({ params: { petId: '7' }, headers: { 'Idempotency-Key': key } });
  const keyOf = (d: OpenApiDocument, key: string) => judge(d, entryPatch(d), patchInput(d), sent(key));
  assert.is(keyOf(doc, 'ORDER').code, 'invalid_idempotency_key');
  assert.is(keyOf(doc, 'order').input?.key, 'order');
  assert.is(keyOf(served, '"ORDER"').input?.key, 'ORDER');
});

test("the feed's cursor and limit, and the audit query, are the document's", () => {
  const doc = documentWith((d) => {
    const feed = d.paths['/events'].get.parameters;
    feed[1].schema.pattern = '^(0|[1-9][0-9]{0,2})$';
    feed[2].schema.maximum = 10;
    (d.paths['/audit/stock-adjustments'].get.parameters as Doc[]).find((p) => p.name === 'format')!.schema.enum = ['json'];
  });
  const served = loadOpenApi().doc;
  const feed = (ctx: Context) => judge(doc, events(doc), feedInput(doc), ctx);
  const servedFeed = (ctx: Context) => judge(served, events(served), feedInput(served), ctx);
  const digest = `5:${'a'.repeat(64)}`;
  for (const [query, refused] of [
    [{ after: digest }, true],
    [{ after: '999' }, false],
    [{ limit: '11' }, true],
    [{ limit: '10' }, false],
  ] as const) {
    assert.is(feed(requestOf({ query })).code === 'FeedQueryInvalid', refused, JSON.stringify(query));
    assert.is(servedFeed(requestOf({ query })).code, undefined, JSON.stringify(query));
  }
  const refused = feed(requestOf({ query: { limit: '0' } }));
  assert.is(refused.message, 'limit must be an integer from 1 to 10, not "0"', 'the refusal says the bounds of the document');
  assert.equal(feed(requestOf({ query: { after: '12' } })).input, { stream: false, after: { seq: 12n }, limit: 100 });
  const stream = requestOf({ query: {}, headers: { Accept: 'text/event-stream', 'Last-Event-ID': digest } });
  assert.is(feed(stream).code, 'FeedQueryInvalid', 'Last-Event-ID is judged as after is');
  const csv = requestOf({ query: { pet: '7', format: 'csv' } });
  const audit = adjustments();
  const route = { ...audit, operation: audit.operation! };
  assert.is(judge(doc, route, (p) => p, csv).code, 'bad_request');
  assert.is(judge(served, route, (p) => p, csv).code, undefined);
});

test("an integer schema's text: canonical decimal, its bounds exact, int64's maximum as the format says", () => {
  const doc: Doc = loadOpenApi().doc;
  assert.equal(textSchemaOf(doc.components.parameters.PetId.schema), {
    type: 'string',
    pattern: '^[1-9][0-9]*$',
    decimalRange: { minimum: '1', maximum: '9223372036854775807' },
  });
  assert.equal(textSchemaOf({ type: 'integer', minimum: 0, maximum: 10 }).pattern, '^(0|[1-9][0-9]*)$');
  assert.throws(() => textSchemaOf({ type: 'integer', minimum: 1, maximum: 2 ** 60 }), /past 2\^53/);
  assert.throws(() => textSchemaOf({ type: 'integer', multipleOf: 2 }), /multipleOf/);
});

const COERCED = ['007', '1e3', '+7', '0x10', '9223372036854775808', '7.0', '-1', '%207', '0b1'];

/** Each parameter that holds a number: how a value is sent, the refusal, and its largest value. */
const NUMBERS: { name: string; send: (v: string) => string; code: string; largest: string }[] = [
  { name: 'petId', send: (v) => `/v1/inventory/${v}`, code: 'invalid_pet_id', largest: '9223372036854775807' },
  { name: 'after', send: (v) => `/v1/events?after=${v}`, code: 'bad_request', largest: '9223372036854775807' },
  { name: 'limit', send: (v) => `/v1/events?limit=${v}`, code: 'bad_request', largest: '1000' },
  { name: 'pet', send: (v) => `/v1/audit/stock-adjustments?pet=${v}`, code: 'bad_request', largest: '9223372036854775807' },
  { name: 'after', send: (v) => `/v1/audit/stock-adjustments?pet=7&after=${v}`, code: 'bad_request', largest: '9007199254740991' },
  { name: 'limit', send: (v) => `/v1/audit/stock-adjustments?pet=7&limit=${v}`, code: 'bad_request', largest: '1000' },
  { name: 'size', send: (v) => `/v1/log/proof/inclusion?seq=1&size=${v}`, code: 'bad_request', largest: '9007199254740991' },
  { name: 'to', send: (v) => `/v1/log/proof/consistency?from=1&to=${v}`, code: 'bad_request', largest: '9007199254740991' },
];

const live = appSuite('every parameter that holds a number, as it is written');

live('007, 1e3, +7, 0x10, int64 max + 1 and the like are 400 on every parameter; the largest value is not refused', async ({ t }) => {
  await t.track(7, 1);
  for (const { name, send, code, largest } of NUMBERS) {
    for (const value of [...COERCED, String(BigInt(largest) + 1n)]) {
      const res = await t.get(send(encodeURIComponent(value).replace('%25', '%')));
      assertErrorShape(res, 400, code, `${send(value)}`);
      assert.ok(res.text.includes(name), `${send(value)} names ${name}: ${res.text}`);
    }
    const res = await t.get(send(largest));
    assert.is.not(res.status, 400, `${send(largest)}: ${res.text}`);
  }
  const patch = await t.patch('0x10', { quantity: 1 });
  assertErrorShape(patch, 400, 'invalid_pet_id');
  const stream = await t.get('/v1/events', { Accept: 'text/event-stream', 'Last-Event-ID': '1e3' });
  assertErrorShape(stream, 400, 'bad_request');
});

test.run();
live.run();
