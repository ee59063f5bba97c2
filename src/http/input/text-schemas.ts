// The one Ajv the OpenAPI document's schemas are compiled by, and the text schema of a
// parameter. A parameter arrives as text; Ajv's `integer` judges numbers, and coercing the
// text first would let `007`, `1e3`, `+7`, `0x10` and a number past int64 through as
// numbers. So an `integer` schema is judged as the text it stands for: canonical decimal
// digits (a `pattern`), and its minimum and maximum compared exactly, as BigInts.
import { Ajv2020 } from 'ajv/dist/2020.js';

type Schema = Record<string, unknown>;

const INT64 = { minimum: -(2n ** 63n), maximum: 2n ** 63n - 1n };
const INT32 = { minimum: -(2n ** 31n), maximum: 2n ** 31n - 1n };

/** The keyword of a derived text schema: the decimal text's value lies in these bounds. */
const DECIMAL_RANGE = 'decimalRange';

let shared: Ajv2020 | undefined;

/** The Ajv every schema of the document is compiled by (its compiled functions are
 * cached by schema): OpenAPI's annotations and integer formats, and the text bounds. */
export function documentAjv(): Ajv2020 {
  if (shared) return shared;
  // OpenAPI annotations that are not JSON Schema vocabulary must still be allowed.
  const ajv = new Ajv2020({ strict: true, allErrors: false });
  ajv.addKeyword('example');
  // OpenAPI's integer formats; the bounds themselves are minimum/maximum in the schema.
  ajv.addFormat('int32', { type: 'number', validate: (n: number) => n >= -(2 ** 31) && n < 2 ** 31 });
  ajv.addFormat('int64', { type: 'number', validate: (n: number) => Number.isInteger(n) });
  ajv.addKeyword({
    keyword: DECIMAL_RANGE,
    type: 'string',
    schemaType: 'object',
    validate: (range: { minimum: string; maximum: string }, text: string) => {
      // The pattern beside it is what judges the text's form.
      if (!/^-?[0-9]+$/.test(text)) return false;
      const value = BigInt(text);
      return value >= BigInt(range.minimum) && value <= BigInt(range.maximum);
    },
  });
  shared = ajv;
  return ajv;
}

/**
 * A bound of an integer schema, exact. A JSON number beyond the doubles' exact integers
 * is rounded when it is read: the document's int64 maximum is read as the double above it
 * (JSON has no way to write it exactly), so a bound is held to the range of the schema's
 * format, where the format says what the bound means. Beyond them without a format, no
 * exact bound can be known: that is a fault of the document, refused at start.
 */
function exactBound(schema: Schema, which: 'minimum' | 'maximum'): bigint | undefined {
  const bound = schema[which];
  if (bound === undefined) return undefined;
  if (typeof bound !== 'number') throw new Error(`an integer schema's ${which} must be a number`);
  const rounded = which === 'minimum' ? Math.ceil(bound) : Math.floor(bound);
  const range = formatRange(schema);
  if (!range) {
    if (!Number.isSafeInteger(rounded)) throw new Error(`an integer schema's ${which} past 2^53 needs the format int32 or int64`);
    return BigInt(rounded);
  }
  const whole = BigInt(rounded);
  if (which === 'minimum') return whole < range.minimum ? range.minimum : whole;
  return whole > range.maximum ? range.maximum : whole;
}

function formatRange(schema: Schema): { minimum: bigint; maximum: bigint } | undefined {
  return schema.format === 'int64' ? INT64 : schema.format === 'int32' ? INT32 : undefined;
}

const KNOWN = new Set(['type', 'format', 'minimum', 'maximum', 'default', 'example', 'description']);

/**
 * The schema a parameter's text is judged by: its own, or for an `integer` the text it
 * stands for. Canonical decimal: no sign on a positive number, no leading zero, no
 * fraction or exponent; a range that allows no negative number leaves the sign out.
 */
export function textSchemaOf(schema: Schema): Schema {
  if (schema.type !== 'integer') return schema;
  for (const keyword of Object.keys(schema)) {
    if (!KNOWN.has(keyword)) throw new Error(`an integer parameter's ${keyword} has no text form`);
  }
  const range = formatRange(schema);
  const minimum = exactBound(schema, 'minimum') ?? range?.minimum;
  const maximum = exactBound(schema, 'maximum') ?? range?.maximum;
  const pattern =
    minimum !== undefined && minimum >= 1n
      ? '^[1-9][0-9]*$'
      : minimum !== undefined && minimum >= 0n
        ? '^(0|[1-9][0-9]*)$'
        : '^(0|-?[1-9][0-9]*)$';
  const text: Schema = { type: 'string', pattern };
  if (minimum !== undefined && maximum !== undefined) {
    text[DECIMAL_RANGE] = { minimum: String(minimum), maximum: String(maximum) };
  } else if (minimum !== undefined || maximum !== undefined) {
    throw new Error('an integer parameter needs both bounds, or a format that gives them');
  }
  return text;
}

/** The exact bounds of an integer schema, as decimal text; undefined for other schemas. */
export function textBounds(schema: Schema): { minimum: string; maximum: string } | undefined {
  if (schema.type !== 'integer') return undefined;
  const range = textSchemaOf(schema)[DECIMAL_RANGE] as { minimum: string; maximum: string } | undefined;
  return range;
}
