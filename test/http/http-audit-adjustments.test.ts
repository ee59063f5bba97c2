// GET /v1/audit/stock-adjustments: the rows of the stock_adjustments table by pet, actor
// and time window in keyset pages (the auditors' page draws a pet's history from it), as
// JSON or as scripts/audit's CSV; any key, a read-only one too; nonsense in the query is
// 400 and reads nothing.
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

/** Pet 7 tracked with 1, then set to QUANTITIES by the tester, with pet 8 changed by the
 * key "clerk" in between, one second a step. */
const adjustments = appSuite('GET /v1/audit/stock-adjustments', {
  async given(t) {
    const clerk = { Authorization: `Bearer ${await t.keys.create('clerk', 'test')}` };
    await t.track(7, 1);
    await t.track(8, 1);
    for (const [i, quantity] of QUANTITIES.entries()) {
      t.tick(1000);
      assert.is((await t.patch(7, { quantity }, { 'X-Request-Id': i === 3 ? '-2-3' : `req-${i}` })).status, 200);
      assert.is((await t.patch(8, { quantity: i }, clerk)).status, 200);
    }
  },
});

/** Every row the query selects, page after page. */
async function allRows(t: { get(path: string): Promise<{ status: number; text: string }> }, query: string): Promise<Page['adjustments']> {
  const rows: Page['adjustments'] = [];
  for (let after = 0, pages = 0; ; pages++) {
    assert.ok(pages < 20, 'the pages end');
    const res = await t.get(`${PATH}?${query}${query ? '&' : ''}after=${after}&limit=4`);
    assert.is(res.status, 200, `${query}: ${res.text}`);
    const page = JSON.parse(res.text) as Page;
    rows.push(...page.adjustments);
    if (page.next === null) return rows;
    after = page.next;
  }
}

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

adjustments('since, until and actor select rows in any combination with pet, page after page', async ({ t }) => {
  const all = await allRows(t, '');
  assert.is(all.length, 2 * QUANTITIES.length, 'no filter: every row of the log');
  const times = [...new Set(all.map((r) => String(r.recorded_at)))];
  assert.is(times.length, QUANTITIES.length, 'one second a step');
  const [since, until] = [times[2]!, times[5]!];
  const window = all.filter((r) => String(r.recorded_at) >= since && String(r.recorded_at) < until);
  assert.is(window.length, 6, 'three steps of two pets: since inclusive, until exclusive');
  assert.equal(await allRows(t, `since=${since}&until=${until}`), window);
  // The same instants written with an offset.
  const shifted = (iso: string) => new Date(Date.parse(iso) + 2 * 3600_000).toISOString().replace('Z', '+02:00');
  assert.equal(await allRows(t, `since=${encodeURIComponent(shifted(since))}&until=${encodeURIComponent(shifted(until))}`), window);
  assert.equal(
    await allRows(t, `since=${since}`),
    all.filter((r) => String(r.recorded_at) >= since),
  );
  assert.equal(
    await allRows(t, `until=${until}`),
    all.filter((r) => String(r.recorded_at) < until),
  );
  const clerk = all.filter((r) => r.actor === 'clerk');
  assert.equal(
    clerk.map((r) => r.pet_id),
    QUANTITIES.map(() => 8),
  );
  assert.equal(await allRows(t, 'actor=clerk'), clerk);
  assert.equal(
    await allRows(t, `actor=clerk&since=${since}&until=${until}`),
    window.filter((r) => r.actor === 'clerk'),
  );
  assert.equal(
    await allRows(t, `pet=7&since=${since}&until=${until}`),
    window.filter((r) => r.pet_id === 7),
  );
  assert.equal(await allRows(t, 'pet=7&actor=clerk'), [], 'the clerk never changed pet 7');
  assert.equal(await allRows(t, `pet=8&actor=clerk&until=${since}`), clerk.slice(0, 2));

  const first = await t.get(`${PATH}?actor=clerk&since=${encodeURIComponent(shifted(since))}&limit=2&format=csv`);
  assert.is(first.status, 200, first.text);
  assert.is(first.headers['content-disposition'], 'attachment; filename="stock-adjustments.csv"');
  const link = /^<([^>]+)>; rel="next"$/.exec(String(first.headers.link))![1]!;
  const next = new URL(link, 'http://x').searchParams;
  assert.equal([...next.keys()], ['actor', 'since', 'after', 'limit', 'format'], 'the next page keeps the filters as given');
  assert.is(next.get('since'), shifted(since));
  const second = await t.get(link);
  assert.is(second.status, 200, second.text);
  assert.is(second.text.split('\n').length, 4, 'a header and two rows');
});

adjustments('nonsense in the query is 400 bad_request, naming what is wrong', async ({ t }) => {
  const cases: [string, RegExp][] = [
    ['colour=red', /unknown query parameter "colour"/],
    ['since=2026-11-21T10:00:00', /since must be an ISO 8601 instant/],
    ['since=2026-02-30', /since must be an ISO 8601 instant/],
    ['until=2026-11-21T24:00Z', /until must be an ISO 8601 instant/],
    ['until=yesterday', /until must be an ISO 8601 instant/],
    ['actor=', /actor must be an actor's name/],
    ['actor=%07bell', /actor must be an actor's name/],
    ['since=2026-11-21&since=2026-11-22', /since is given more than once/],
    ['pet=0', /pet must be an integer from 1 to 9223372036854775807, not/],
    ['pet=007', /pet must be an integer from 1 to 9223372036854775807, not/],
    ['pet=9223372036854775808', /pet must be an integer from 1 to 9223372036854775807, not/],
    ['pet=seven', /pet must be an integer from 1 to 9223372036854775807, not/],
    ['pet=7&after=-1', /after must be an integer from 0 to 9007199254740991, not/],
    ['pet=7&after=01', /after must be an integer from 0 to 9007199254740991, not/],
    ['pet=7&after=99999999999999999', /after must be an integer from 0 to 9007199254740991, not/],
    ['pet=7&limit=0', /limit must be an integer from 1 to 1000/],
    ['pet=7&limit=1001', /limit must be an integer from 1 to 1000/],
    ['pet=7&limit=1e3', /limit must be an integer from 1 to 1000/],
    ['pet=7&format=xml', /format must be json or csv, not/],
    ['pet=7&pet=8', /pet is given more than once/],
  ];
  for (const [query, message] of cases) {
    const body = assertErrorShape(await t.get(`${PATH}?${query}`), 400, 'bad_request', query);
    assert.match(body.message, message, query);
  }
});

adjustments.run();
