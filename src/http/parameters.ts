// Judges a route's parameters (its path's, its query's, its headers') against the schemas
// of its operation in the OpenAPI document, compiled once at start. Text from the URL and
// the headers is judged as the text it is (a `pattern`), never coerced to a number. Only
// the parameters given a refusal are judged: the others are never refused (X-Request-Id)
// or are preconditions, which fail with 412 where they are evaluated.
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import type { Context } from 'koa';
import type { OpenApiDocument } from '../openapi.ts';

/** The error a parameter's wrong or missing value is answered with. */
export type Refusal = (name: string) => Error;

interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  required?: boolean;
  schema: Record<string, unknown>;
}

interface Judged {
  parameter: Parameter;
  check: ValidateFunction;
  refuse: Refusal;
}

/** An Ajv that knows the OpenAPI annotations and integer formats the document uses. */
export function documentAjv(): Ajv2020 {
  // OpenAPI annotations that are not JSON Schema vocabulary must still be allowed.
  const ajv = new Ajv2020({ strict: true, allErrors: false });
  ajv.addKeyword('example');
  // OpenAPI's integer formats; the bounds themselves are minimum/maximum in the schema.
  ajv.addFormat('int32', { type: 'number', validate: (n: number) => n >= -(2 ** 31) && n < 2 ** 31 });
  ajv.addFormat('int64', { type: 'number', validate: (n: number) => Number.isInteger(n) });
  return ajv;
}

/** The operation of a route: its template (`/v1/log/head`, `/v1/inventory/:petId`) is
 * the document's path under its server (`/log/head`, `/inventory/{petId}`). */
function operationOf(doc: OpenApiDocument, method: string, template: string): { parameters?: unknown[] } {
  const path = template.replace(/^\/v1(?=\/)/, '').replace(/:(\w+)/g, '{$1}');
  const paths = doc.paths as Record<string, Record<string, { parameters?: unknown[] }>> | undefined;
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

function valueOf(ctx: Context, parameter: Parameter): unknown {
  switch (parameter.in) {
    case 'path':
      return (ctx.params as Record<string, string> | undefined)?.[parameter.name];
    case 'query':
      return ctx.query[parameter.name];
    case 'header':
      return ctx.req.headers[parameter.name.toLowerCase()];
    case 'cookie':
      return undefined;
  }
}

/**
 * The judge of a route's parameters, in the order the document lists them: the first that
 * is missing while required, or whose value its schema refuses, is answered with its
 * refusal. Every name in refusals must be a parameter of the operation.
 */
export function parameterJudge(
  doc: OpenApiDocument,
  route: { method: string; template: string },
  refusals: Record<string, Refusal>,
  ajv: Ajv2020 = documentAjv(),
): (ctx: Context) => void {
  const parameters = (operationOf(doc, route.method, route.template).parameters ?? []).map((p) => resolved(doc, p));
  const judged: Judged[] = Object.entries(refusals).map(([name, refuse]) => {
    const parameter = parameters.find((p) => p.name === name);
    if (!parameter) throw new Error(`${route.method} ${route.template} has no parameter ${name} in the OpenAPI document`);
    return { parameter, check: ajv.compile(parameter.schema), refuse };
  });
  judged.sort((a, b) => parameters.indexOf(a.parameter) - parameters.indexOf(b.parameter));
  return (ctx) => {
    for (const { parameter, check, refuse } of judged) {
      const value = valueOf(ctx, parameter);
      if (value === undefined ? parameter.required === true : !check(value)) throw refuse(parameter.name);
    }
  };
}
