// Judges a route's parameters from its operation in the OpenAPI document, compiled once at
// start, as fastify compiles a route's schemas: first the query's names (only the
// operation's query parameters, each once: every operation refuses a name it does not
// take, one with no query parameters included), then every path and query parameter by
// its schema, in the document's order, then the headers the route gives a refusal. The
// other headers are never refused (X-Request-Id) or are preconditions, which fail with 412
// where they are evaluated. A parameter not sent is given the default its schema states.
import type { Context } from 'koa';
import type { OpenApiDocument } from '../../openapi.ts';
import { HttpError } from '../stages/errors.ts';
import { operationIdOf, operationParameters, parameterText, spoken, type CheckedParameter, type Refusal } from './parameters.ts';
import { documentAjv, textBounds } from './text-schemas.ts';

/** What a query that names a parameter the operation does not have, or names one twice,
 * is answered with. */
interface QueryShapeRefusals {
  unknown: (name: string, names: readonly string[]) => Error;
  repeated: (name: string) => Error;
}

/** How a route's parameters are refused: by name (a path or query parameter without one is
 * refused by its schema's rule), and the query's shape (bad_request unless given). */
export interface InputRules {
  refusals?: Record<string, Refusal>;
  queryShape?: QueryShapeRefusals;
}

/** The judged text of the operation's parameters, by name; undefined when not sent. */
export type JudgedParameters = Readonly<Record<string, string | undefined>>;

const bad = (message: string) => new HttpError(400, 'bad_request', message);

const QUERY_SHAPE: QueryShapeRefusals = {
  unknown: (name, names) =>
    bad(
      `unknown query parameter ${JSON.stringify(name.slice(0, 100))}: ${names.length === 0 ? 'this operation takes none' : `only ${spoken(names)}`}`,
    ),
  repeated: (name) => bad(`${name} is given more than once`),
};

/** What a schema asks of a value, in words: its bounds as the document gives them. */
export function ruleOf(schema: Record<string, unknown>): string {
  const bounds = textBounds(schema);
  if (bounds) return `an integer from ${bounds.minimum} to ${bounds.maximum}`;
  if (Array.isArray(schema.enum)) {
    const values = schema.enum.map(String);
    return values.length === 1 ? values[0]! : `${values.slice(0, -1).join(', ')} or ${values.at(-1)!}`;
  }
  return 'as the OpenAPI document describes it';
}

/** A parameter's refusal when the route gives none: the rule its schema states. */
const byRule =
  (schema: Record<string, unknown>): Refusal =>
  (name, value) =>
    bad(`${name} must be ${ruleOf(schema)}, not ${JSON.stringify((value ?? '').slice(0, 40))}`);

/** A parameter's default as the text a client would send, if the document gives one. */
function defaultOf(schema: Record<string, unknown>): string | undefined {
  const value = schema.default;
  return typeof value === 'string' || typeof value === 'number' ? String(value) : undefined;
}

function queryShapeJudge(parameters: readonly CheckedParameter[], refusals: QueryShapeRefusals) {
  const names = parameters.filter((p) => p.in === 'query').map((p) => p.name);
  const ajv = documentAjv();
  // An operation without query parameters knows no name: the schema that accepts nothing.
  const known = ajv.compile(names.length > 0 ? { enum: names } : false);
  const once = ajv.compile({ type: 'string' });
  return (query: Record<string, string | string[] | undefined>) => {
    for (const [name, value] of Object.entries(query)) {
      if (!known(name)) throw refusals.unknown(name, names);
      if (!once(value)) throw refusals.repeated(name);
    }
  };
}

/**
 * The judge of a route's operation, named by its operationId: the operation the document
 * gives the route's path and method must be that one, and every name in the rules'
 * refusals one of its parameters, or the service does not start.
 */
export function operationJudge(
  doc: OpenApiDocument,
  route: { method: string; template: string; operation: string },
  rules: InputRules = {},
): (ctx: Context) => JudgedParameters {
  const where = `${route.method} ${route.template}`;
  const operationId = operationIdOf(doc, route);
  const parameters = operationParameters(doc, route);
  if (operationId !== route.operation)
    throw new Error(`${where} is the operation ${operationId} in the OpenAPI document, not ${route.operation}`);
  const refusals = rules.refusals ?? {};
  for (const name of Object.keys(refusals)) {
    if (!parameters.some((p) => p.name === name)) throw new Error(`${where} has no parameter ${name} in the OpenAPI document`);
  }
  const shape = queryShapeJudge(parameters, rules.queryShape ?? QUERY_SHAPE);
  const judged = parameters
    .filter((p) => p.in === 'path' || p.in === 'query' || refusals[p.name] !== undefined)
    .map((p) => ({ parameter: p, refuse: refusals[p.name] ?? byRule(p.schema), fallback: defaultOf(p.schema) }));
  return (ctx) => {
    shape(ctx.query);
    const texts: Record<string, string | undefined> = {};
    for (const { parameter, refuse, fallback } of judged) texts[parameter.name] = parameterText(ctx, parameter, refuse) ?? fallback;
    return texts;
  };
}
