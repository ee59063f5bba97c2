// The inventory entry's input, from its operations in the OpenAPI document, compiled once
// at start: the path's pet id (judged by the router), then (a PATCH) the body against the
// InventoryUpdate schema, then its Idempotency-Key, in that order, as fastify judges
// params, body, then headers. Each 400 names the member and the rule.
import type { ErrorObject } from 'ajv/dist/2020.js';
import type { Context } from 'koa';
import type { OpenApiDocument } from '../../openapi.ts';
import type { ReadBody } from './body.ts';
import { readNumberLiteral } from '../../json/json-number.ts';
import type { JsonNode } from '../../json/strict-json.ts';
import { HttpError } from '../stages/errors.ts';
import { keyOf } from './idempotency-key.ts';
import { parameterText, operationParameters, parameterNamed, type Refusal } from './parameters.ts';
import type { InputRules, JudgedParameters } from './operation-input.ts';
import { documentAjv, textBounds } from './text-schemas.ts';
import { bodyOf } from '../stages/request-state.ts';

type Schema = Record<string, unknown> & { properties?: Record<string, Record<string, unknown>> };

export interface ValidatedPatch {
  petId: bigint;
  quantity: number;
  /** The Idempotency-Key, unquoted; undefined without the header. */
  key: string | undefined;
}

const ENTRY = '/v1/inventory/:petId';

/** The pet id's refusal, which says the bounds its schema gives. */
function notAPetId(schema: Record<string, unknown>): Refusal {
  const bounds = textBounds(schema);
  if (!bounds) throw new Error(`${ENTRY}: the document's petId is not an integer`);
  return (_name, value) =>
    new HttpError(
      400,
      'invalid_pet_id',
      `petId must be decimal digits from ${bounds.minimum} to ${bounds.maximum} without sign or leading zero; got ${show(value ?? '')}`,
    );
}

const notAKey: Refusal = () =>
  new HttpError(
    400,
    'invalid_idempotency_key',
    'Idempotency-Key must be 1 to 255 visible ASCII characters, bare or in double quotes, sent once',
  );

/** How the entry's routes refuse a pet id: the same for every method on the entry. */
export function entryRules(doc: OpenApiDocument, method: 'GET' | 'PATCH'): InputRules {
  const petId = parameterNamed(operationParameters(doc, { method, template: ENTRY }), 'petId', `${method} ${ENTRY}`);
  return { refusals: { petId: notAPetId(petId.schema) } };
}

/** GET /v1/inventory/{petId}: the pet id the router judged. */
export const entryInput = (parameters: JudgedParameters): bigint => BigInt(parameters.petId!);

/** The body of a PATCH, judged as written: a ValidatedPatch's quantity, or a 400. */
function bodyJudge(doc: OpenApiDocument): (body: ReadBody) => number {
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion -- it is needed: Schema types `properties`, which tsc checks below
  const schema = doc.components.schemas.InventoryUpdate as Schema | undefined;
  if (!schema) throw new Error('the OpenAPI document has no InventoryUpdate schema');
  const check = documentAjv().compile<{ quantity: number }>(schema);
  return (body) => {
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
    return body.value.quantity + 0;
  };
}

/** PATCH /v1/inventory/{petId}: the pet id the router judged, then the body, then the
 * Idempotency-Key. */
export function patchInput(doc: OpenApiDocument): (parameters: JudgedParameters, ctx: Context) => ValidatedPatch {
  const quantityOf = bodyJudge(doc);
  const where = `PATCH ${ENTRY}`;
  const key = parameterNamed(operationParameters(doc, { method: 'PATCH', template: ENTRY }), 'Idempotency-Key', where);
  return (parameters, ctx) => {
    const petId = entryInput(parameters);
    const quantity = quantityOf(bodyOf(ctx));
    const text = parameterText(ctx, key, notAKey);
    return { petId, quantity, key: text === undefined ? undefined : keyOf(text) };
  };
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
