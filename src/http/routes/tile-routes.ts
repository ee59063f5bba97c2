// GET /v1/log/tile/<L>/<N>[.p/<W>], /v1/log/tile/entries/<N>[.p/<W>] and
// /v1/log/tile/events/<N>[.p/<W>]: the log as C2SP tlog-tiles serves it (hash tiles and
// entry bundles) and, beside the bundles, the same events as the feed's JSON Lines. A tile
// never changes once the log holds it, so a full one is cached for a year; a partial one
// (any width the log holds) is revalidated. The path is judged by the document's patterns.
import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import type { Context } from 'koa';
import type { TileReads } from '../../application/read/tiles.ts';
import { parseTileIndex, parseTileLevel, TILE_WIDTH, type Tile } from '../../support/tiles.ts';
import { HttpError } from '../stages/errors.ts';
import type { Refusal } from '../input/parameters.ts';
import type { JudgedParameters } from '../input/operation-input.ts';
import { withInput, type Reply, type Route } from './router.ts';
import { readsOnNextTurn } from '../stages/key-fairness.ts';

interface TileRouteDeps {
  tiles: TileReads;
}

const FULL = 'private, max-age=31536000, immutable';
const OCTETS = 'application/octet-stream';

const malformed: Refusal = (name, value) =>
  new HttpError(
    400,
    'bad_request',
    `${name} ${JSON.stringify(value ?? '')} is not a tile's ${name === 'level' ? 'level (0 to 63, no leading zeros)' : 'index: 3-digit elements, all but the last prefixed with x, no leading zeros, then .p/<1 to 255> for a partial tile'}`,
  );

/** How a tile's path parameters are refused. */
const TILE_RULES = { refusals: { level: malformed, index: malformed } };
const BUNDLE_RULES = { refusals: { index: malformed } };

/** The tile a judged path names. */
function tileOf(kind: 'hash' | 'entries' | 'events'): (parameters: JudgedParameters) => Tile {
  return ({ index, level }) => {
    const at = parseTileIndex(index!);
    const tileLevel = kind === 'hash' ? parseTileLevel(level!) : kind;
    // The document's patterns and these parsers say the same; a path past either is malformed.
    if (at === undefined || tileLevel === undefined) throw malformed('index', index);
    return { kind: tileLevel, ...at };
  };
}

const notHeld = (ctx: Context) => new HttpError(404, 'not_found', `the log holds no tile ${ctx.path.slice('/v1/log/'.length, 200)} yet`);

/** A tile's answer: immutable once full, its strong ETag the digest of the bytes sent. */
function tileReply(width: number, type: string, body: Buffer, headers: Record<string, string> = {}): Reply {
  const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`;
  return {
    headers: { 'Content-Type': type, 'Cache-Control': width === TILE_WIDTH ? FULL : 'no-cache', ETag: etag, ...headers },
    body,
  };
}

/** A bundle's answer, gzip-compressed when the request accepts it. */
function bundleReply(ctx: Context, width: number, type: string, body: Buffer): Reply {
  const gzip = ctx.acceptsEncodings('gzip', 'identity') === 'gzip';
  const headers: Record<string, string> = gzip ? { 'Content-Encoding': 'gzip', Vary: 'Accept-Encoding' } : { Vary: 'Accept-Encoding' };
  return tileReply(width, type, gzip ? gzipSync(body) : body, headers);
}

export function tileRoutes({ tiles }: TileRouteDeps): Route[] {
  const bundleRoute = (kind: 'entries' | 'events', type: string): Route => {
    const template = `/v1/log/tile/${kind}/*index`;
    return {
      method: 'GET',
      template,
      operation: kind === 'entries' ? 'getEntryBundle' : 'getEventBundle',
      rules: BUNDLE_RULES,
      stages: [readsOnNextTurn],
      handler: withInput(tileOf(kind), async (ctx, { index, width }) => {
        const body = await tiles[kind](index, width);
        if (!body) throw notHeld(ctx);
        return bundleReply(ctx, width, type, body);
      }),
    };
  };
  const hashTemplate = '/v1/log/tile/:level/*index';
  // The bundles first: their paths would match the hash tiles' template too.
  return [
    bundleRoute('entries', OCTETS),
    bundleRoute('events', 'application/x-ndjson'),
    {
      method: 'GET',
      template: hashTemplate,
      operation: 'getHashTile',
      rules: TILE_RULES,
      stages: [readsOnNextTurn],
      handler: withInput(tileOf('hash'), async (ctx, { kind, index, width }) => {
        const body = await tiles.hashTile(kind as number, index, width);
        if (!body) throw notHeld(ctx);
        return tileReply(width, OCTETS, body);
      }),
    },
  ];
}
