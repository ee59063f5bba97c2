// GET /docs and its assets: served by the service itself from the npm package, without a
// key, only the files listed, with a strict Content-Security-Policy on the page.
import * as assert from 'uvu/assert';
import { assertErrorShape } from '../kit/http.ts';
import { defaultTarget } from '../kit/stores.ts';
import { appSuite } from '../kit/suites.ts';

// The page does not depend on the store: one target is enough.
const docs = appSuite('GET /docs', {}, [defaultTarget()]);

docs('the page answers without a key, as HTML with a strict Content-Security-Policy', async ({ t }) => {
  const res = await t.request({ path: '/docs' });
  assert.is(res.status, 200);
  assert.is(res.headers['content-type'], 'text/html; charset=utf-8');
  assert.is(res.headers['x-content-type-options'], 'nosniff');
  assert.is(res.headers['cache-control'], 'public, max-age=300');
  assert.not.match(res.text, /https?:\/\//, 'the page names no host: nothing from a CDN');
  const csp = String(res.headers['content-security-policy']);
  assert.match(csp, /default-src 'none'/);
  assert.match(csp, /script-src 'self'(;|$)/, 'no inline or remote script');
  assert.match(csp, /connect-src 'self'(;|$)/, 'requests go to this service only');
  assert.match(res.text, /<script src="\/docs\/swagger-ui-bundle\.js"><\/script>/);
  assert.not.match(res.text, /<script>/, 'no inline script');
});

docs('every asset the page names is served, with its type; none comes from another host', async ({ t }) => {
  const page = (await t.request({ path: '/docs' })).text;
  const assets = [...page.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!).filter((u) => u !== 'data:,');
  assert.equal(assets.sort(), ['/docs/init.js', '/docs/swagger-ui-bundle.js', '/docs/swagger-ui.css']);
  const types: Record<string, RegExp> = { js: /^text\/javascript; charset=utf-8$/, css: /^text\/css; charset=utf-8$/ };
  for (const path of assets) {
    const res = await t.request({ path });
    assert.is(res.status, 200, path);
    assert.match(String(res.headers['content-type']), types[path.split('.').pop()!]!, path);
    assert.ok(res.text.length > 0, path);
    assert.is(res.headers['x-content-type-options'], 'nosniff', path);
    assert.is(res.headers['cache-control'], 'public, max-age=300', path);
    assert.is(res.headers['content-security-policy'], undefined, `${path}: the policy is the page's`);
  }
  const init = (await t.request({ path: '/docs/init.js' })).text;
  assert.not.match(init, /https?:\/\//, 'the page script names no host');
  assert.match(init, /validatorUrl: null/, 'no request to the public validator');
});

docs('an asset is revalidated by its ETag: 304 when unchanged', async ({ t }) => {
  const first = await t.request({ path: '/docs/swagger-ui.css' });
  const etag = String(first.headers.etag);
  assert.match(etag, /^"[\w-]{27}"$/);
  const again = await t.request({ path: '/docs/swagger-ui.css', headers: { 'If-None-Match': etag } });
  assert.is(again.status, 304);
  assert.is(again.text, '');
});

docs('only the listed files: other paths under /docs are 404 in the Error shape, other methods 405', async ({ t }) => {
  for (const path of ['/docs/', '/docs/index.html', '/docs/package.json', '/docs/../package.json', '/docs/%2e%2e/package.json', '/DOCS']) {
    assertErrorShape(await t.request({ path }), 404, 'not_found', path);
  }
  const res = await t.request({ path: '/docs', method: 'POST' });
  assertErrorShape(res, 405, 'method_not_allowed');
  assert.match(String(res.headers.allow), /GET/);
  assert.is((await t.request({ path: '/docs', method: 'HEAD' })).status, 200);
});

docs.run();
