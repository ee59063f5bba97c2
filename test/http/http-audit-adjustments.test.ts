// GET /v1/audit/stock-adjustments: one pet's rows of the stock_adjustments view in keyset
// pages (the auditors' page draws a pet's history from it), as JSON or as scripts/audit's
// CSV; any key, a read-only one too; nonsense in the query is 400 and reads nothing.
import { Ajv2020 } from 'ajv/dist/2020.js';
import * as assert from 'uvu/assert';
import { COLUMNS, formatterFor, NUMERIC } from '../../src/support/audit-format.ts';
import type { AdjustmentRow } from '../../src/store/audit-reads.ts';
import { assertErrorShape } from '../kit/http.ts';
import { doc } from '../kit/openapi-document.ts';
import { appSuite } from '../kit/suites.ts';

const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
ajv.addSchema(doc, 'openapi');
const PAGE_SCHEMA = {
  $ref: 'openapi#/paths/~1audit~1stock-adjustments/get/responses/200/content/application~1json/schema',
};

interface Page {
  adjustments: Record<string, unknown>[];
  next: number | null;
}

const PATH = '/v1/audit/stock-adjustments';
const QUANTITIES = [5, 9, 9, 2, 14, 0, 3];

/** Pet 7 tracked with 1, then set to QUANTITIES, with pet 8 changed in between. */
const adjustments = appSuite('GET /v1/audit/stock-adjustments', {
  async given(t) {
    await t.track(7, 1);
    await t.track(8, 1);
    for (const [i, quantity] of QUANTITIES.entries()) {
      t.tick(1000);
      assert.is((await t.patch(7, { quantity }, { 'X-Request-Id': i === 3 ? '-2-3' : `req-${i}` })).status, 200);
      assert.is((await t.patch(8, { quantity: i })).status, 200);
    }
  },
});

/** The pet's rows as scripts/audit reads them. */
async function auditRows(t: {
  store: { stockAdjustments(filter: { pet: bigint }): AsyncIterable<AdjustmentRow[]> };
}): Promise<AdjustmentRow[]> {
  const rows: AdjustmentRow[] = [];
  for await (const page of t.store.stockAdjustments({ pet: 7n })) rows.push(...page);
  return rows;
}

adjustments("pages by seq until next is null, each row the audit view's, with its actor, request id and time", async ({ t }) => {
  const seen: Page['adjustments'] = [];
  const links: string[] = [];
  let after = 0;
  for (let pages = 0; ; pages++) {
    assert.ok(pages < 10, 'the pages end');
    const res = await t.get(`${PATH}?pet=7&after=${after}&limit=3`);
    assert.is(res.status, 200, res.text);
    assert.is(res.headers['cache-control'], 'no-store');
    const page = JSON.parse(res.text) as Page;
    assert.ok(ajv.validate(PAGE_SCHEMA, page), ajv.errorsText());
    seen.push(...page.adjustments);
    if (page.next === null) {
      assert.is(res.headers.link, undefined, 'no next page, no Link');
      break;
    }
    assert.ok(page.adjustments.length === 3);
    assert.is(page.next, page.adjustments[2]!.seq);
    links.push(String(res.headers.link));
    after = page.next;
  }
  assert.equal(links[0], `<${PATH}?pet=7&after=${String(seen[2]!.seq)}&limit=3>; rel="next"`);
  assert.equal(
    seen.map((r) => r.quantity),
    QUANTITIES,
  );
  assert.equal(
    seen.map((r) => r.previous_quantity),
    [1, ...QUANTITIES.slice(0, -1)],
  );
  assert.ok(seen.every((r) => r.pet_id === 7 && r.actor === 'tester'));
  assert.equal(seen[3]!.request_id, '-2-3');
  const expected = (await auditRows(t)).map((r) => JSON.parse(formatterFor('jsonl', COLUMNS, NUMERIC).row(r)) as unknown);
  assert.equal(seen, expected, 'the rows scripts/audit --pet 7 --format jsonl lists');
  const rest = JSON.parse((await t.get(`${PATH}?pet=7&after=${String(seen[4]!.seq)}`)).text) as Page;
  assert.equal(
    rest.adjustments.map((r) => r.quantity),
    QUANTITIES.slice(5),
    'after is exclusive',
  );
  const none = JSON.parse((await t.get(`${PATH}?pet=99`)).text) as Page;
  assert.equal(none, { adjustments: [], next: null }, 'a pet without adjustments: an empty last page');
});

adjustments("format=csv: the same rows in scripts/audit's CSV, a formula-like cell made text", async ({ t }) => {
  const res = await t.get(`${PATH}?pet=7&format=csv`);
  assert.is(res.status, 200, res.text);
  assert.match(String(res.headers['content-type']), /^text\/csv; charset=utf-8$/);
  assert.is(res.headers['content-disposition'], 'attachment; filename="stock-adjustments-7.csv"');
  const csv = formatterFor('csv', COLUMNS, NUMERIC);
  const rows = await auditRows(t);
  assert.is(res.text, csv.begin() + rows.map((r) => csv.row(r)).join(''));
  assert.ok(res.text.includes(",tester,'-2-3\n"), 'the request id -2-3 is written as text');
  const paged = await t.get(`${PATH}?pet=7&format=csv&limit=2`);
  assert.is(paged.text.split('\n').length, 4, 'a header and two rows');
  assert.match(String(paged.headers.link), /&limit=2&format=csv>; rel="next"$/);
});

adjustments('a read-only key may read it; without a key it is 401', async ({ t }) => {
  const reader = await t.keys.create('auditor', 'test', 'read-only');
  const res = await t.get(`${PATH}?pet=7`, { Authorization: `Bearer ${reader}` });
  assert.is(res.status, 200, res.text);
  assert.is((JSON.parse(res.text) as Page).adjustments.length, QUANTITIES.length);
  assertErrorShape(await t.request({ path: `${PATH}?pet=7` }), 401, 'unauthorized');
});

adjustments('nonsense in the query is 400 bad_request, naming what is wrong', async ({ t }) => {
  const cases: [string, RegExp][] = [
    ['', /pet is required/],
    ['pet=0', /pet must be a pet id/],
    ['pet=007', /pet must be a pet id/],
    ['pet=9223372036854775808', /pet must be a pet id/],
    ['pet=seven', /pet must be a pet id/],
    ['pet=7&after=-1', /after must be a seq/],
    ['pet=7&after=01', /after must be a seq/],
    ['pet=7&after=99999999999999999', /after must be a seq/],
    ['pet=7&limit=0', /limit must be an integer from 1 to 1000/],
    ['pet=7&limit=1001', /limit must be an integer from 1 to 1000/],
    ['pet=7&limit=1e3', /limit must be an integer from 1 to 1000/],
    ['pet=7&format=xml', /format must be json or csv/],
    ['pet=7&actor=tester', /unknown query parameter "actor"/],
    ['pet=7&pet=8', /pet is given more than once/],
  ];
  for (const [query, message] of cases) {
    const body = assertErrorShape(await t.get(`${PATH}?${query}`), 400, 'bad_request', query);
    assert.match(body.message, message, query);
  }
});

adjustments.run();
