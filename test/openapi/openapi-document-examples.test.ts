// Every example in the OpenAPI document is an answer the document allows: tools show
// examples as the truth (the docs page, mock servers, generated clients), so each one is
// validated with Ajv against the schema beside it, formats included. A Server-Sent Events
// example is a stream, not JSON: each message's data is a FeedEvent.
// This test walks an arbitrary JSON document, so its values are untyped by nature.
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { doc, type Obj } from '../kit/openapi-document.ts';

const ajv = new Ajv2020({ strict: false, allErrors: true });
// ajv-formats is CommonJS: imported from ESM, its plugin is the module's `default`.
addFormatsModule.default(ajv);
ajv.addSchema(doc, 'openapi');

interface Example {
  where: string;
  /** JSON pointer of the schema the example must satisfy. */
  schema: string;
  mediaType?: string;
  value: unknown;
}

const pointer = (path: string[]) => `#/${path.map((p) => p.replaceAll('~', '~0').replaceAll('/', '~1')).join('/')}`;
function resolve(o: Obj): Obj {
  if (typeof o.$ref !== 'string') return o;
  const keys = o.$ref
    .slice(2)
    .split('/')
    .map((p) => p.replaceAll('~1', '/').replaceAll('~0', '~'));
  return resolve(keys.reduce<Obj>((a, k) => a[k] as Obj, doc));
}

/** Every example and examples of the document: of schemas, media types, parameters and headers. */
function examples(node: unknown, path: string[] = []): Example[] {
  if (node === null || typeof node !== 'object') return [];
  if (Array.isArray(node)) return node.flatMap((item, i) => examples(item, [...path, String(i)]));
  const o = node as Obj;
  const found: Example[] = [];
  // Under `properties` the keys are names, so one called "example" would be a property.
  const isObjectWithExamples = path.at(-1) !== 'properties';
  if (isObjectWithExamples && ('example' in o || 'examples' in o)) {
    const where = pointer(path);
    // A media type, parameter or header holds its schema in `schema`; otherwise `o` is the schema.
    const holdsSchema = 'schema' in o;
    const schema = holdsSchema ? pointer([...path, 'schema']) : where;
    const mediaType = path.at(-2) === 'content' ? path.at(-1) : undefined;
    if ('example' in o) found.push({ where: `${where}/example`, schema, mediaType, value: o.example });
    if (holdsSchema && o.examples !== undefined) {
      for (const [name, ex] of Object.entries(o.examples as Obj)) {
        found.push({ where: `${where}/examples/${name}`, schema, mediaType, value: resolve(ex as Obj).value });
      }
    } else if (Array.isArray(o.examples)) {
      (o.examples as unknown[]).forEach((value, i) => found.push({ where: `${where}/examples/${i}`, schema, value }));
    }
  }
  for (const [key, value] of Object.entries(o)) {
    if (key !== 'example' && key !== 'examples') found.push(...examples(value, [...path, key]));
  }
  return found;
}

/** The data of each message of a Server-Sent Events text, parsed as JSON (several data lines join with "\n"). */
function streamData(text: string): unknown[] {
  return text
    .split(/\r?\n\r?\n/)
    .map((message) =>
      message
        .split(/\r?\n/)
        .filter((line) => line === 'data' || line.startsWith('data:'))
        .map((line) => line.slice('data:'.length).replace(/^ /, '')),
    )
    .filter((lines) => lines.length > 0)
    .map((lines) => JSON.parse(lines.join('\n')) as unknown);
}

const all = examples(doc);

test('the document has examples, and a stream example among them', () => {
  assert.ok(all.length > 0, 'no example found: the walk is broken');
  assert.ok(
    all.some((e) => e.mediaType === 'text/event-stream'),
    'the stream example is found',
  );
});

test('every example is valid against the schema beside it', () => {
  const failures: string[] = [];
  for (const example of all) {
    const check = (value: unknown, schema: string, what: string) => {
      if (!ajv.validate({ $ref: `openapi${schema}` }, value)) failures.push(`${what}: ${ajv.errorsText()}`);
    };
    check(example.value, example.schema, example.where);
    if (example.mediaType === 'text/event-stream') {
      assert.type(example.value, 'string', `${example.where} is the stream's text`);
      const events = streamData(example.value as string);
      assert.ok(events.length > 0, `${example.where} has no data line`);
      events.forEach((event, i) => check(event, '#/components/schemas/FeedEvent', `${example.where}, message ${i + 1}'s data`));
    }
  }
  assert.equal(failures, []);
});

test('the walk finds what it should: a bad example is reported', () => {
  const bad = { components: { schemas: { N: { type: 'integer', minimum: 1, example: 0 } } } };
  const found = examples(bad);
  assert.equal(found, [{ where: '#/components/schemas/N/example', schema: '#/components/schemas/N', mediaType: undefined, value: 0 }]);
  const local = new Ajv2020({ strict: false });
  local.addSchema(bad, 'bad');
  assert.not.ok(local.validate({ $ref: `bad${found[0]!.schema}` }, found[0]!.value));
  assert.equal(streamData('id: 1\ndata: {"a":\ndata: 1}\n\n: comment\n\nretry: 5\n\n'), [{ a: 1 }]);
});

test.run();
