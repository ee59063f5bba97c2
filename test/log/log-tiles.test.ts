// The log as C2SP tlog-tiles through the API, on both stores: the hash tiles are the
// stored tree (level 0 the events' leaf hashes, level 1 the roots of full level-0 tiles,
// the whole folding to the checkpoint's root), the entry bundles the events' hashes and
// the events bundles the feed's own objects; full tiles are immutable, partial ones come
// for any width the log holds, a tile past the tree is 404, a malformed path 400, and
// the bundles are gzip-compressed for a request that accepts it.
import { gunzipSync } from 'node:zlib';
import * as assert from 'uvu/assert';
import { eventLeaf, extendTree, treeRoot } from '../../src/support/merkle.ts';
import { TILE_WIDTH, tilePath, tilesOf, type Tile } from '../../src/support/tiles.ts';
import { assertErrorShape } from '../kit/http.ts';
import { conforms } from '../kit/openapi-document.ts';
import { signedLogSuite } from '../kit/tiles.ts';
import { asText, getBytes } from '../kit/bytes.ts';
import type { TestApp } from '../kit/app.ts';

const SIZE = 600;
const FULL = 'private, max-age=31536000, immutable';

const tiles = signedLogSuite('the log as tiles', SIZE);

const get = (t: TestApp, path: string, headers: Record<string, string> = {}) =>
  getBytes(t.port, `/v1/log/${path}`, { Authorization: `Bearer ${t.key}`, ...headers });

/** The root of the leaves, folded as the tree folds them. */
const rootOf = (leaves: Buffer[]) => {
  const { lookup } = extendTree(0, new Map(), leaves);
  return treeRoot(leaves.length, lookup);
};

/** Each path is answered with the error status and code, as the document describes it. */
async function refused(t: TestApp, status: number, code: string, paths: string[]): Promise<void> {
  for (const path of paths) {
    const res = asText(await get(t, path));
    assertErrorShape(res, status, code, path);
    conforms('GET', `/v1/log/${path}`, res);
  }
}

const hashesOf = (bytes: Buffer) => Array.from({ length: bytes.length / 32 }, (_, i) => bytes.subarray(i * 32, i * 32 + 32));

tiles('the hash tiles are the tree: the leaves, the roots of full tiles above them, folding to the checkpoint', async ({ t }) => {
  const events = await t.events();
  const leaves = events.map((e) => eventLeaf(e.hash!));
  const level0: Buffer[] = [];
  const level1: Buffer[] = [];
  for (const tile of tilesOf(SIZE)) {
    const res = await get(t, tilePath(tile));
    assert.is(res.status, 200, `${tilePath(tile)}: ${res.body.toString()}`);
    assert.is(res.headers['content-type'], 'application/octet-stream');
    assert.is(res.body.length, tile.width * 32);
    assert.is(res.headers['cache-control'], tile.width === TILE_WIDTH ? FULL : 'no-cache', tilePath(tile));
    assert.match(res.headers.etag!, /^"[A-Za-z0-9_-]{22}"$/);
    conforms('GET', `/v1/log/${tilePath(tile)}`, asText(res));
    (tile.kind === 0 ? level0 : level1).push(...hashesOf(res.body));
  }
  assert.equal(tilesOf(SIZE).map(tilePath), ['tile/0/000', 'tile/0/001', 'tile/0/002.p/88', 'tile/1/000.p/2']);
  assert.equal(level0, leaves);
  assert.equal(level1, [rootOf(leaves.slice(0, 256)), rootOf(leaves.slice(256, 512))]);
  const checkpoint = (await get(t, 'checkpoint')).body.toString().split('\n');
  assert.is(checkpoint[1], String(SIZE));
  assert.is(checkpoint[2], rootOf(level0).toString('base64'));
});

tiles('a partial tile for any width the log holds, the same bytes as the full one begins with; past the tree 404', async ({ t }) => {
  const full = (await get(t, 'tile/0/001')).body;
  for (const width of [1, 5, 255]) {
    const res = await get(t, `tile/0/001.p/${width}`);
    assert.is(res.status, 200);
    assert.is(res.headers['cache-control'], 'no-cache');
    assert.equal(res.body, full.subarray(0, width * 32));
  }
  assert.is((await get(t, 'tile/0/002.p/88')).status, 200);
  assert.is((await get(t, 'tile/entries/002.p/88')).status, 200);
  assert.is((await get(t, 'tile/1/000.p/2')).status, 200);
  await refused(t, 404, 'not_found', [
    'tile/0/002',
    'tile/0/002.p/89',
    'tile/0/003.p/1',
    'tile/0/x001/000',
    'tile/1/000',
    'tile/1/000.p/3',
    'tile/2/000.p/1',
    'tile/63/000.p/1',
    'tile/0/x999/x999/x999/x999/x999/x999/999',
    'tile/entries/002',
    'tile/entries/002.p/89',
    'tile/events/003.p/1',
  ]);
});

tiles('a malformed tile path is 400 bad_request', async ({ t }) => {
  await refused(t, 400, 'bad_request', [
    'tile/00/000',
    'tile/01/000',
    'tile/64/000',
    'tile/0/00',
    'tile/0/0000',
    'tile/0/x000/001',
    'tile/0/001/002',
    'tile/0/000.p/0',
    'tile/0/000.p/256',
    'tile/0/000.p/07',
    'tile/0/000.p/',
    'tile/0/000/',
    'tile/0/X001/002',
    'tile/-1/000',
    'tile/entries/x000/000',
    'tile/events/000.p/256',
    'tile/entries/abc',
  ]);
});

const bundleTiles: Tile[] = [
  { kind: 'entries', index: 0, width: 256 },
  { kind: 'entries', index: 2, width: 88 },
];

tiles('an entry bundle: each event a uint16 length 32 and its hash; gzip when accepted, the same bytes inside', async ({ t }) => {
  const events = await t.events();
  for (const tile of bundleTiles) {
    const first = tile.index * TILE_WIDTH;
    const expected = Buffer.concat(
      events.slice(first, first + tile.width).map((e) => Buffer.concat([Buffer.from([0, 32]), Buffer.from(e.hash!, 'hex')])),
    );
    const plain = await get(t, tilePath(tile));
    assert.is(plain.status, 200);
    assert.is(plain.headers['content-type'], 'application/octet-stream');
    assert.is(plain.headers['content-encoding'], undefined);
    assert.is(plain.headers.vary, 'Accept-Encoding');
    assert.equal(plain.body, expected);
    conforms('GET', `/v1/log/${tilePath(tile)}`, asText(plain));
    const zipped = await get(t, tilePath(tile), { 'Accept-Encoding': 'gzip, deflate' });
    assert.is(zipped.headers['content-encoding'], 'gzip');
    assert.is(zipped.headers['cache-control'], tile.width === TILE_WIDTH ? FULL : 'no-cache');
    assert.is.not(zipped.headers.etag, plain.headers.etag, 'each encoding its own strong tag');
    assert.equal(gunzipSync(zipped.body), expected);
    conforms('GET', `/v1/log/${tilePath(tile)}`, asText(zipped));
    const refused = await get(t, tilePath(tile), { 'Accept-Encoding': 'gzip;q=0, identity' });
    assert.is(refused.headers['content-encoding'], undefined);
  }
});

tiles('an events bundle: JSON Lines, each line the object a feed page gives; a read-only key may read every tile', async ({ t }) => {
  const readOnly = await t.store.keys.create('auditor', 'test', 'read-only');
  for (const tile of [
    { kind: 'events', index: 1, width: 256 },
    { kind: 'events', index: 2, width: 88 },
  ] satisfies Tile[]) {
    const page = await t.get(`/v1/events?after=${tile.index * TILE_WIDTH}&limit=${tile.width}`);
    // The feed's page is a JSON array of the same objects, written the same way.
    const lines = page.text.slice(1, -1).replaceAll('},{"seq"', '}\n{"seq"');
    const res = await getBytes(t.port, `/v1/log/${tilePath(tile)}`, { Authorization: `Bearer ${readOnly}` });
    assert.is(res.status, 200);
    assert.is(res.headers['content-type'], 'application/x-ndjson');
    assert.is(res.body.toString(), `${lines}\n`);
    assert.is(res.body.toString().split('\n').length, tile.width + 1);
    conforms('GET', `/v1/log/${tilePath(tile)}`, asText(res));
  }
  for (const path of ['tile/0/000', 'tile/entries/000', 'tile/1/000.p/2']) {
    assert.is((await getBytes(t.port, `/v1/log/${path}`, { Authorization: `Bearer ${readOnly}` })).status, 200, path);
  }
  assert.is((await getBytes(t.port, '/v1/log/tile/0/000', {})).status, 401);
});

tiles.run();
