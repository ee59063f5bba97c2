// Every operation takes only the query parameters its OpenAPI document lists: a name it
// does not list is 400 in the Error shape on every route, the routes with no query
// parameters at all included, before any handler runs, on every store.
import * as assert from 'uvu/assert';
import { assertErrorShape } from '../kit/http.ts';
import { appSuite } from '../kit/suites.ts';

/** The routes whose operations take no query parameter, and whether they need a key. */
const WITHOUT_QUERY: { path: string; open?: true }[] = [
  { path: '/v1/inventory' },
  { path: '/v1/inventory/7' },
  { path: '/v1/log/head' },
  { path: '/v1/log/checkpoint' },
  { path: '/v1/log/signing-keys' },
  { path: '/v1/log/tile/0/000' },
  { path: '/v1/log/tile/entries/000' },
  { path: '/v1/log/tile/events/000' },
  { path: '/openapi.json', open: true },
  { path: '/healthz', open: true },
  { path: '/readyz', open: true },
];

const live = appSuite('an unknown query parameter', { given: (t) => t.track(7, 1) });

live('is 400 bad_request on every route whose operation takes no query parameter', async ({ t }) => {
  for (const { path, open } of WITHOUT_QUERY) {
    const sent = `${path}?verbose=1`;
    const res = open ? await t.request({ path: sent }) : await t.get(sent);
    const body = assertErrorShape(res, 400, 'bad_request', sent);
    assert.is(body.message, 'unknown query parameter "verbose": this operation takes none', sent);
    // The same route without it is not refused.
    const plain = open ? await t.request({ path }) : await t.get(path);
    assert.is.not(plain.status, 400, `${path}: ${plain.text.slice(0, 200)}`);
  }
});

live('is 400 on a PATCH, and no event is appended', async ({ t }) => {
  const before = (await t.events()).length;
  const res = await t.patch('7?dryRun=true', { quantity: 3 });
  assertErrorShape(res, 400, 'bad_request', 'PATCH with ?dryRun');
  assert.is((await t.events()).length, before);
  assert.is((await t.get('/v1/inventory/7')).status, 200);
});

live('is refused on HEAD as on GET, and a name sent twice on the routes with a query', async ({ t }) => {
  const head = await t.request({ method: 'HEAD', path: '/v1/log/head?x', headers: { Authorization: `Bearer ${t.key}` } });
  assert.is(head.status, 400);
  assertErrorShape(await t.get('/v1/inventory?x=1&x=2'), 400, 'bad_request', 'a name twice');
  assertErrorShape(await t.get('/v1/log/proof/inclusion?seq=1&size=1&size=1'), 400, 'bad_request', 'a parameter twice');
});

live.run();
