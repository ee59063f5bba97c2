// The change feed's JSON pages, GET /v1/events, on every store: every event once, in seq
// order, against the table; bad parameters, no key and other methods.
import * as assert from 'uvu/assert';
import { GENESIS_HASH } from '../../src/store/hash-chain.ts';
import { assertErrorShape } from '../kit/http.ts';
import { BIG, parseEvents, assertChain, seed } from '../kit/feed.ts';
import { appSuite } from '../kit/suites.ts';

const test = appSuite('the change feed: pages');

test('pages hold every event once, in seq order, for after at every boundary and any limit', async ({ t }) => {
  await seed(t);
  const table = await t.events();
  const seqs = table.map((e) => e.seq);
  for (const limit of [1, 7, 100, 1000]) {
    for (let i = 0; i <= seqs.length; i++) {
      const after = i === 0 ? 0n : seqs[i - 1]!;
      const got: bigint[] = [];
      let path = `/v1/events?after=${after}&limit=${limit}`;
      for (;;) {
        const res = await t.get(path);
        assert.is(res.status, 200, res.text);
        const page = parseEvents(res.text);
        assert.ok(page.length <= limit, 'at most limit');
        const next = /^<([^>]+)>; rel="next"$/.exec(String(res.headers.link));
        assert.ok(next, `a Link to the next page: ${String(res.headers.link)}`);
        path = next[1]!;
        if (page.length === 0) break;
        got.push(...page.map((e) => BigInt(e.seq)));
        // Only checked on the widest pages: the rest is the same rows.
        if (limit === 1000 && i === 0) {
          assertChain(page, GENESIS_HASH);
          page.forEach((e, k) => {
            const row = table[k]!;
            assert.equal(
              [e.seq, e.petId, e.version, e.type, JSON.stringify(e.data), e.actor, e.requestId, e.recordedAt],
              [String(row.seq), String(row.petId), Number(row.version), row.type, row.data, row.actor, row.requestId, row.recordedAt],
            );
          });
        }
      }
      assert.equal(got, seqs.slice(i), `after=${after} limit=${limit}`);
    }
  }
  const res = await t.get('/v1/events');
  assert.is(res.headers['cache-control'], 'no-store');
  assert.match(String(res.headers['content-type']), /^application\/json/);
  assert.is(parseEvents(res.text).length, Math.min(100, seqs.length), 'limit 100 by default');
  assert.ok(res.text.includes(`"petId":${BIG},`), 'int64 ids as bare exact numbers');
  const last = table[table.length - 1]!;
  const head = `${last.seq}:${last.hash}`;
  assert.is(res.headers.link, `</v1/events?after=${head}&limit=100>; rel="next"`, 'Link carries the digest');
  const empty = await t.get(`/v1/events?after=${last.seq}`);
  assert.is(empty.text, '[]', 'nothing yet');
  assert.is(empty.headers.link, `</v1/events?after=${head}&limit=100>; rel="next"`, 'the next page is the same place');
});

test('bad parameters are 400 in the Error shape; no key is 401; other methods 405', async ({ t }) => {
  await seed(t, 2, 2);
  for (const query of [
    'after=-1',
    'after=abc',
    'after=01',
    'after=1.5',
    'after=1e3',
    'after=',
    'after=9223372036854775808',
    'limit=0',
    'limit=1001',
    'limit=-5',
    'limit=1.0',
    'limit=',
    'limit=abc',
    'after=1&after=2',
    'limit=5&limit=6',
    'from=3',
  ]) {
    assertErrorShape(await t.get(`/v1/events?${query}`), 400, 'bad_request', query);
  }
  assertErrorShape(await t.get('/v1/events', { Accept: 'text/event-stream', 'Last-Event-ID': 'x' }), 400, 'bad_request', 'Last-Event-ID');
  assertErrorShape(await t.request({ path: '/v1/events' }), 401, 'unauthorized');
  assertErrorShape(await t.request({ path: '/v1/events?after=abc' }), 401, 'unauthorized', 'the key first');
  const post = await t.request({ method: 'POST', path: '/v1/events', headers: { Authorization: `Bearer ${t.key}` } });
  assertErrorShape(post, 405, 'method_not_allowed');
  assertErrorShape(await t.get('/v1/events/'), 404, 'not_found');
});

test.run();
