// Judges a PATCH before any handler runs: first the path's pet id, then the body against
// the InventoryUpdate schema compiled (once, at start) from the OpenAPI document. Each
// 400 names the member and the rule.
import { Ajv2020, type ErrorObject } from 'ajv/dist/2020.js';
import type { Middleware } from 'koa';
import { parsePetId } from '../domain/events.ts';
import type { OpenApiDocument } from '../openapi.ts';
import type { ReadBody } from './body.ts';
import { readNumberLiteral } from '../json/json-number.ts';
import type { JsonNode } from '../json/strict-json.ts';
import { HttpError } from './errors.ts';

type Schema = Record<string, unknown> & { properties?: Record<string, Record<string, unknown>> };

export interface ValidatedPatch {
  petId: bigint;
  quantity: number;
}

export function validatePatch(doc: OpenApiDocument): Middleware {
  // OpenAPI annotations that are not JSON Schema vocabulary must still be allowed.
  const ajv = new Ajv2020({ strict: true, allErrors: false });
  ajv.addKeyword('example');
  // OpenAPI's integer formats; the bounds themselves are minimum/maximum in the schema.
  ajv.addFormat('int32', { type: 'number', validate: (n: number) => n >= -(2 ** 31) && n < 2 ** 31 });
  ajv.addFormat('int64', { type: 'number', validate: (n: number) => Number.isInteger(n) });
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion -- it is needed: Schema types `properties`, which tsc checks below
  const schema = doc.components.schemas.InventoryUpdate as Schema | undefined;
  if (!schema) throw new Error('the OpenAPI document has no InventoryUpdate schema');
  const check = ajv.compile<{ quantity: number }>(schema);

  return async function validate(ctx, next) {
    const petId = pathPetId(ctx.params);
    const body = ctx.state.body as ReadBody;
    if (body.kind === 'missing') {
      throw new HttpError(400, 'missing_body', 'the body is missing: send {"quantity": <integer>} as application/json');
    }
    if (body.kind === 'malformed') {
      throw new HttpError(400, 'malformed_json', `the body is not valid JSON: ${body.reason.slice(0, 200)}`);
    }
    if (body.kind === 'duplicate') {
      throw new HttpError(400, 'invalid_body', `member ${show(body.member)} appears more than once: send it once`);
    }
    if (body.kind === 'forbidden') {
      throw new HttpError(400, 'invalid_body', `unknown member ${show(body.member)}: the body takes only "quantity"`);
    }
    // The body as written: a number is judged (and quoted) as the client wrote it.
    const members = body.node.kind === 'object' ? body.node.members : undefined;
    if (!check(body.value)) {
      throw new HttpError(400, 'invalid_body', describe(check.errors?.[0], schema, body.value, members));
    }
    // JSON.parse rounds 5.0000000000000001 to 5 and 1e-400 to 0: judge the number as written.
    const written = members?.get('quantity');
    if (written?.kind === 'number' && readNumberLiteral(written.literal).kind !== 'integer') {
      throw new HttpError(
        400,
        'invalid_body',
        `quantity must be ${describeSchema(schema.properties?.quantity)}; got the fraction ${show(written.literal)}`,
      );
    }
    // JSON's -0 is the number 0.
    ctx.state.patch = { petId, quantity: body.value.quantity + 0 } satisfies ValidatedPatch;
    await next();
  };
}

/** The path's petId, or a 400 that says the rule (the same for every method on the entry). */
export function pathPetId(params: unknown): bigint {
  // The router puts the path's parameters on ctx.params.
  const rawId = (params as Record<string, string> | undefined)?.petId ?? '';
  const petId = parsePetId(rawId);
  if (petId === undefined) {
    throw new HttpError(
      400,
      'invalid_pet_id',
      `petId must be decimal digits from 1 to 9223372036854775807 without sign or leading zero; got ${show(rawId)}`,
    );
  }
  return petId;
}

function describe(
  error: ErrorObject | null | undefined,
  schema: Schema,
  value: unknown,
  written: ReadonlyMap<string, JsonNode> | undefined,
): string {
  if (!error) return 'the body does not match the InventoryUpdate schema';
  const members = Object.keys(schema.properties ?? {})
    .map((m) => `"${m}"`)
    .join(', ');
  const member = error.instancePath.slice(1).replaceAll('/', '.');
  switch (error.keyword) {
    case 'required':
      return `member "${String(error.params.missingProperty)}" is required: send {"quantity": <integer>}`;
    case 'additionalProperties':
      return `unknown member "${String(error.params.additionalProperty)}": the body takes only ${members}`;
  }
  if (member === '') return `the body must be a JSON object with only ${members}; got ${kindOf(value)}`;
  const rule = describeSchema(schema.properties?.[member]);
  // A number is quoted as the client wrote it: JSON.parse turns 9007199254740993 into
  // ...992, and a message must not show the client a value it did not send.
  const literal = written?.get(member);
  const got = literal?.kind === 'number' ? `number ${shorten(literal.literal)}` : kindOf((value as Record<string, unknown>)[member]);
  return `${member} must be ${rule}; got ${got}`;
}

function describeSchema(s: Record<string, unknown> | undefined): string {
  if (s?.type === 'integer' && typeof s.minimum === 'number' && typeof s.maximum === 'number') {
    return `an integer from ${String(s.minimum)} to ${String(s.maximum)}`;
  }
  return `of type ${String(s?.type)}`;
}

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  if (typeof value === 'string') return `the string ${show(value)}`;
  // eslint-disable-next-line @typescript-eslint/no-base-to-string -- objects, arrays, null and strings are handled above: what is left prints as itself
  return `${typeof value} ${String(value)}`;
}

function show(text: string): string {
  return JSON.stringify(shorten(text));
}

function shorten(text: string): string {
  return text.length > 40 ? `${text.slice(0, 40)}…` : text;
}
