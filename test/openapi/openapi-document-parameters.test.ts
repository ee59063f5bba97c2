// The request headers' schemas, taken from the document, against what the service does
// with them, as a contract tester (Schemathesis) checks them: a value a schema refuses is
// refused, with the status the document gives for it; a value it accepts is never refused
// for its shape; and the answers that depend on the entry (412, 422) are listed on the
// operations that give them. Values are drawn from a seeded generator over the characters
// that matter to each header, so a failure names a seed to repeat. The document's
// parameters are read as untyped JSON; the assertions check them.
/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-call, @typescript-eslint/no-unsafe-return, @typescript-eslint/no-unsafe-argument */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseTagCondition } from '../../src/http/input/preconditions.ts';
import { assertErrorShape } from '../kit/http.ts';
import { ajv, conforms, deref, doc, liveSuite, operationOf, type Obj } from '../kit/openapi-document.ts';
import { seededRandom } from '../kit/random.ts';

const SEED = 44;

/** The header parameters an operation declares, by lower-case name. */
function headerParameters(op: Obj): Map<string, Obj> {
  const found = (op.parameters ?? []).map(deref).filter((p: Obj) => p.in === 'header') as Obj[];
  return new Map(found.map((p) => [String(p.name).toLowerCase(), p]));
}

/** Whether the document lets a parameter's text through: an integer schema as the decimal
 * text of an integer in its bounds (a query carries text), any other schema as it is. */
const accepts = (parameter: Obj, value: string): boolean => {
  const schema = parameter.schema as Obj;
  if (schema.type !== 'integer') return ajv.validate(schema, value);
  if (!/^(0|-?[1-9][0-9]*)$/.test(value)) return false;
  const n = BigInt(value);
  return n >= BigInt(schema.minimum as number) && n <= BigInt(schema.maximum as number);
};

/** What a field carries: HTTP strips the white space around a header's value. */
const fieldValue = (value: string) => value.replace(/^[ \t]+|[ \t]+$/g, '');

/** Header values made of these pieces, up to `most` of them, from a seeded generator. */
function values(pieces: string[], count: number, most = 4): string[] {
  const random = seededRandom(SEED);
  const made = new Set<string>();
  for (let i = 0; i < count; i++) {
    const n = Math.floor(random() * (most + 1));
    made.add(fieldValue(Array.from({ length: n }, () => pieces[Math.floor(random() * pieces.length)]).join('')));
  }
  return [...made];
}

const TAG_PIECES = ['"1"', 'W/"1"', '"2"', '""', ',', ' ', '\t', '*', '"', 'x', 'W/', '\u00e9', ', '];
const KEY_PIECES = ['a', 'Z', '~', '"', ' ', '\u00e9', '\\', 'order-1'];

// What the service answers to a value each header's schema refuses, whatever the entry.
const REFUSED_WITH: Record<string, { status: number; code: string }> = {
  'if-match': { status: 412, code: 'precondition_failed' },
  'if-none-match': { status: 412, code: 'precondition_failed' },
  'idempotency-key': { status: 400, code: 'invalid_idempotency_key' },
};

// The operations the tests send requests to, each as a request on pet 7 (version "1").
// (`as` is how the document's helpers name the path: the feed's without /v1.)
const OPERATIONS = [
  { method: 'GET', path: '/v1/inventory', as: '/v1/inventory' },
  { method: 'GET', path: '/v1/inventory/7', as: '/v1/inventory/7' },
  { method: 'PATCH', path: '/v1/inventory/7', as: '/v1/inventory/7' },
  { method: 'GET', path: '/v1/events', as: '/events' },
];

test('If-Match and If-None-Match: the schema accepts exactly the values the service can read', () => {
  const schemas = OPERATIONS.flatMap(({ method, as }) => {
    const declared = headerParameters(operationOf(method, as));
    return ['if-match', 'if-none-match']
      .map((name) => declared.get(name))
      .filter((p): p is Obj => p !== undefined && REFUSED_WITH[String(p.name).toLowerCase()] !== undefined && p.schema.pattern);
  });
  assert.ok(schemas.length >= 3, 'If-Match on the three inventory operations, If-None-Match on PATCH, give their grammar');
  for (const value of ['', ' ', '*', '"1"', 'W/"1"', '"1", "2"', ',"1",', 'abc', '"1" "2"', '*, "1"', '"1', ...values(TAG_PIECES, 4000)]) {
    const readable = parseTagCondition(value).kind !== 'malformed';
    for (const parameter of schemas) {
      assert.is(accepts(parameter, value), readable, `${parameter.name}: ${JSON.stringify(value)} (seed ${SEED})`);
    }
  }
});

const live = liveSuite('the request headers, as their schemas in the document say');

live(
  'a value a header schema refuses is refused, with the status the document gives; one it accepts is not refused for its shape',
  async ({ t }) => {
    const pieces: Record<string, string[]> = { 'if-match': TAG_PIECES, 'if-none-match': TAG_PIECES, 'idempotency-key': KEY_PIECES };
    let checked = 0;
    for (const { method, path, as } of OPERATIONS) {
      for (const [name, parameter] of headerParameters(operationOf(method, as))) {
        const schema = parameter.schema as Obj;
        // Only the constrained headers: a bare string schema refuses nothing.
        if (schema.pattern === undefined && schema.minLength === undefined && schema.maxLength === undefined) continue;
        const refusal = REFUSED_WITH[name];
        assert.ok(refusal, `${method} ${path}: ${name} has a schema that refuses values: the test knows its refusal`);
        const probes = [...values(pieces[name]!, 60, 3), 'a'.repeat(255), 'a'.repeat(256), `"${'a'.repeat(255)}"`];
        for (const value of probes) {
          const sent = { [parameter.name as string]: value };
          const res = method === 'PATCH' ? await t.patch(7, { quantity: 3 }, sent) : await t.get(path, sent);
          if (!accepts(parameter, value)) {
            assertErrorShape(res, refusal.status, refusal.code, `${method} ${path} ${name}: ${JSON.stringify(value)}`);
            checked++;
          } else if (name !== 'if-match' && name !== 'if-none-match') {
            // An accepted key is the PATCH's (the same body each time: a repeat is a replay).
            assert.is(res.status, 200, `${method} ${path} ${name}: ${JSON.stringify(value)} (${res.text})`);
          } else {
            assert.ok(
              [200, 304, 412].includes(res.status),
              `${method} ${path} ${name}: ${JSON.stringify(value)} is judged, not refused (${res.status})`,
            );
          }
          conforms(method, as, res, sent);
        }
      }
    }
    assert.ok(checked >= 20, `${checked} refused values sent`);
  },
);

live('If-Match: * with If-None-Match: * is the 412 PATCH lists (404 on a pet not tracked); nothing is written', async ({ t }) => {
  const sent = { 'If-Match': '*', 'If-None-Match': '*' };
  const before = (await t.events()).length;
  const res = await t.patch(7, { quantity: 4 }, sent);
  assertErrorShape(res, 412, 'precondition_failed');
  assert.is(res.headers.etag, '"1"');
  conforms('PATCH', '/v1/inventory/7', res, sent);
  assert.match(deref(operationOf('PATCH', '/v1/inventory/7').responses['412']).description, 'If-Match: *` with `If-None-Match: *');
  const untracked = await t.patch(8, { quantity: 4 }, sent);
  assertErrorShape(untracked, 404, 'pet_not_found');
  conforms('PATCH', '/v1/inventory/8', untracked, sent);
  assert.is((await t.events()).length, before, 'nothing written');
});

live('a reused Idempotency-Key with another body is the 422 PATCH lists; nothing is written', async ({ t }) => {
  const first = await t.patch(7, { quantity: 4 }, { 'Idempotency-Key': 'order-1' });
  assert.is(first.status, 200);
  const before = (await t.events()).length;
  const again = await t.patch(7, { quantity: 5 }, { 'Idempotency-Key': 'order-1' });
  assertErrorShape(again, 422, 'idempotency_key_reused');
  conforms('PATCH', '/v1/inventory/7', again, { 'Idempotency-Key': 'order-1' });
  assert.is((await t.events()).length, before, 'nothing written');
});

live(
  'Last-Event-ID is read by streams alone, so no operation declares it: a page ignores any value, a stream refuses one that is no cursor',
  async ({ t }) => {
    for (const [docPath, item] of Object.entries(doc.paths as Obj)) {
      for (const op of Object.values(item as Obj)) {
        if (typeof op === 'object' && op !== null && 'responses' in op) {
          assert.not.ok(headerParameters(op as Obj).has('last-event-id'), `${docPath} declares Last-Event-ID`);
        }
      }
    }
    const page = await t.get('/v1/events', { 'Last-Event-ID': 'abc' });
    assert.is(page.status, 200);
    conforms('GET', '/events', page);
    const stream = await t.get('/v1/events', { 'Last-Event-ID': 'abc', Accept: 'text/event-stream' });
    assertErrorShape(stream, 400, 'bad_request');
    conforms('GET', '/events', stream);
  },
);

test.run();
live(
  "a proof query value the document's schema refuses is 400 bad_request; one it accepts is never refused for its shape",
  async ({ t }) => {
    const probes = ['1', '9', '9007199254740991', '9007199254740992', '9999999999999999', '0', '007', '+7', '1e3', '0x10', '-1', ''];
    for (const [path, names] of [
      ['/v1/log/proof/inclusion', ['seq', 'size']],
      ['/v1/log/proof/consistency', ['from', 'to']],
    ] as const) {
      const parameters = new Map(
        (operationOf('GET', path.slice('/v1'.length)).parameters as Obj[]).map(deref).map((p: Obj) => [p.name as string, p]),
      );
      for (const value of probes) {
        // The first parameter probed, the second the largest count: only the probe's shape can be refused.
        const res = await t.get(`${path}?${names[0]}=${encodeURIComponent(value)}&${names[1]}=9007199254740991`);
        const label = `${path} ${names[0]}=${JSON.stringify(value)}`;
        if (accepts(parameters.get(names[0])!, value))
          assert.not.ok(res.text.includes(`${names[0]} must be an integer`), `${label}: ${res.text}`);
        else assertErrorShape(res, 400, 'bad_request', label);
      }
    }
  },
);

live.run();
