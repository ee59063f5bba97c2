// Judges a route's parameters (its path's, its query's, its headers') against the schemas
// of its operation in the OpenAPI document, compiled once at start. Text from the URL and
// the headers is judged as the text it is (a `pattern`), never coerced to a number: an
// `integer` schema is judged through its text schema (text-schemas.ts). Which parameters
// a route judges, and in what order, is the router's (operation-input.ts).
import type { ValidateFunction } from 'ajv/dist/2020.js';
import type { Context } from 'koa';
import type { OpenApiDocument } from '../../openapi.ts';
import { documentAjv, textSchemaOf } from './text-schemas.ts';

/** The error a parameter's wrong or missing value is answered with, given its name and
 * the value as sent (undefined when it is missing). */
export type Refusal = (name: string, value: string | undefined) => Error;

interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  required?: boolean;
  schema: Record<string, unknown>;
}

/** A parameter of an operation with its compiled check. */
export interface CheckedParameter {
  name: string;
  in: Parameter['in'];
  required: boolean;
  /** The parameter's schema in the document, what a refusal may quote. */
  schema: Record<string, unknown>;
  check: ValidateFunction;
}

interface Operation {
  operationId?: string;
  parameters?: unknown[];
}

/** The operation of a route: its template (`/v1/log/head`, `/v1/inventory/:petId`) is
 * the document's path under its server (`/log/head`, `/inventory/{petId}`). */
function operationOf(doc: OpenApiDocument, method: string, template: string): Operation {
  const path = template.replace(/^\/v1(?=\/)/, '').replace(/[:*](\w+)/g, '{$1}');
  const paths = doc.paths as Record<string, Record<string, Operation>> | undefined;
  const operation = paths?.[path]?.[method.toLowerCase()];
  if (!operation) throw new Error(`the OpenAPI document has no operation ${method} ${path}`);
  return operation;
}

function resolved(doc: OpenApiDocument, parameter: unknown): Parameter {
  const ref = (parameter as { $ref?: string }).$ref;
  if (ref === undefined) return parameter as Parameter;
  const name = ref.replace('#/components/parameters/', '');
  const found = (doc.components as { parameters?: Record<string, Parameter> }).parameters?.[name];
  if (!found) throw new Error(`the OpenAPI document has no parameter ${ref}`);
  return found;
}

/** Every parameter of a route's operation, in the document's order, each with its check
 * compiled by the one Ajv the document's schemas share. */
export function operationParameters(doc: OpenApiDocument, route: { method: string; template: string }): CheckedParameter[] {
  const ajv = documentAjv();
  return (operationOf(doc, route.method, route.template).parameters ?? []).map((p) => {
    const parameter = resolved(doc, p);
    return {
      name: parameter.name,
      in: parameter.in,
      required: parameter.required === true,
      schema: parameter.schema,
      check: ajv.compile(textSchemaOf(parameter.schema)),
    };
  });
}

/** The operationId the document gives a route's operation. */
export function operationIdOf(doc: OpenApiDocument, route: { method: string; template: string }): string | undefined {
  return operationOf(doc, route.method, route.template).operationId;
}

/** The parameter named, which the route's code relies on: its absence from the document is
 * an error at start, not a check skipped. */
export function parameterNamed(parameters: readonly CheckedParameter[], name: string, where: string): CheckedParameter {
  const parameter = parameters.find((p) => p.name === name);
  if (!parameter) throw new Error(`${where} has no parameter ${name} in the OpenAPI document`);
  return parameter;
}

/** A parameter's value as sent: a header sent twice is the one value Node joins with ", ". */
function valueOf(ctx: Context, parameter: Pick<CheckedParameter, 'name' | 'in'>): unknown {
  switch (parameter.in) {
    case 'path':
      return (ctx.params as Record<string, string> | undefined)?.[parameter.name];
    case 'query':
      return ctx.query[parameter.name];
    case 'header': {
      const value = ctx.req.headers[parameter.name.toLowerCase()];
      return Array.isArray(value) ? value.join(', ') : value;
    }
    case 'cookie':
      return undefined;
  }
}

/** Judges one parameter: its value as text once it passes, else its refusal. */
export function parameterText(ctx: Context, parameter: CheckedParameter, refuse: Refusal): string | undefined {
  const value = valueOf(ctx, parameter);
  if (value === undefined) {
    if (parameter.required) throw refuse(parameter.name, undefined);
    return undefined;
  }
  if (!parameter.check(value)) throw refuse(parameter.name, typeof value === 'string' ? value : String(value));
  return value as string;
}

/** Names as a sentence lists them: "a and b", "a, b and c". */
export function spoken(names: readonly string[]): string {
  return names.length <= 2 ? names.join(' and ') : `${names.slice(0, -1).join(', ')} and ${names[names.length - 1]}`;
}
