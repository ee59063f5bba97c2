// GET /v1/log/tile/<L>/<N>[.p/<W>], /v1/log/tile/entries/<N>[.p/<W>] and
// /v1/log/tile/events/<N>[.p/<W>]: the log as C2SP tlog-tiles serves it (hash tiles and
// entry bundles) and, beside the bundles, the same events as the feed's JSON Lines. A tile
// never changes once the log holds it, so a full one is cached for a year; a partial one
// (any width the log holds) is revalidated. The path is judged by the document's patterns.
import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import type { Context, Middleware } from 'koa';
import type { TileReads } from '../../application/read/tiles.ts';
import type { OpenApiDocument } from '../../openapi.ts';
import { parseTileIndex, parseTileLevel, TILE_WIDTH, type Tile } from '../../support/tiles.ts';
import { HttpError } from '../stages/errors.ts';
import { parameterJudge, type Refusal } from '../input/parameters.ts';
import type { Reply, Route } from './router.ts';
import { readsOnNextTurn } from '../stages/key-fairness.ts';

interface TileRouteDeps {
  tiles: TileReads;
  /** The document whose patterns judge the path. */
  openapi: OpenApiDocument;
}

const FULL = 'private, max-age=31536000, immutable';
const OCTETS = 'application/octet-stream';

const malformed: Refusal = (name, value) =>
  new HttpError(
    400,
    'bad_request',
    `${name} ${JSON.stringify(value ?? '')} is not a tile's ${name === 'level' ? 'level (0 to 63, no leading zeros)' : 'index: 3-digit elements, all but the last prefixed with x, no leading zeros, then .p/<1 to 255> for a partial tile'}`,
  );

/** The stage that judges the route's path parameters and leaves the tile on ctx.state. */
function tileJudged(openapi: OpenApiDocument, template: string, kind: 'hash' | 'entries' | 'events'): Middleware {
  const refusals: Record<string, Refusal> = kind === 'hash' ? { level: malformed, index: malformed } : { index: malformed };
  const judge = parameterJudge(openapi, { method: 'GET', template }, refusals);
  return (ctx, next) => {
    judge(ctx);
    const params = ctx.params as Record<string, string>;
    const at = parseTileIndex(params.index!);
    const level = kind === 'hash' ? parseTileLevel(params.level!) : kind;
    // The document's patterns and these parsers say the same; a path past either is malformed.
    if (at === undefined || level === undefined) throw malformed('index', params.index);
    ctx.state.tile = { kind: level, ...at } satisfies Tile;
    return next();
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

export function tileRoutes({ tiles, openapi }: TileRouteDeps): Route[] {
  const bundleRoute = (kind: 'entries' | 'events', type: string): Route => {
    const template = `/v1/log/tile/${kind}/*index`;
    return {
      method: 'GET',
      template,
      stages: [tileJudged(openapi, template, kind), readsOnNextTurn],
      handler: async (ctx) => {
        const { index, width } = ctx.state.tile as Tile;
        const body = await tiles[kind](index, width);
        if (!body) throw notHeld(ctx);
        return bundleReply(ctx, width, type, body);
      },
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
      stages: [tileJudged(openapi, hashTemplate, 'hash'), readsOnNextTurn],
      handler: async (ctx) => {
        const { kind, index, width } = ctx.state.tile as Tile;
        const body = await tiles.hashTile(kind as number, index, width);
        if (!body) throw notHeld(ctx);
        return tileReply(width, OCTETS, body);
      },
    },
  ];
}
