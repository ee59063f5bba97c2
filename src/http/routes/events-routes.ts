// GET /v1/events: the change feed. As JSON, one keyset page of the log after a cursor;
// with Accept: text/event-stream, a Server-Sent Events stream that sends what the reader
// missed and then every new event (the feed hub, feed-hub.ts). Either way a cursor
// that is past the head or not in this log is refused (409), never followed in silence.
// Authentication has already happened: the verified key is on ctx.state.
import type { Feed } from './feed-hub.ts';
import { digestOf, eventJson } from '../../feed/event-json.ts';
import { pageAfter, type CursorStore } from '../../feed/position.ts';
import type { OpenApiDocument } from '../../openapi.ts';
import { feedInput, feedRules, type FeedRequest } from '../input/feed-query.ts';
import { actorOf, credentialOf } from '../stages/request-state.ts';
import { withInput, type Reply, type Route } from './router.ts';
import type { Context } from 'koa';
import { readsOnNextTurn } from '../stages/key-fairness.ts';

export interface EventsDeps {
  store: CursorStore;
  feed: Feed;
  /** The document the query is judged by; the service's own when not given. */
  openapi: OpenApiDocument;
}

/** What a stream's response is: the request-duration histogram leaves it out (a
 * stream's lifetime is not a latency). */
const STREAM_TYPE = 'text/event-stream; charset=utf-8';

export function eventsRoutes({ store, feed, openapi }: EventsDeps): Route[] {
  const handler = async (ctx: Context, { stream, after, limit }: FeedRequest): Promise<Reply | undefined> => {
    // Adds to CORS's Vary.
    ctx.vary('Accept');
    if (stream) {
      // The stream's place first: a key past its bound costs no read of the log.
      const place = feed.admit(actorOf(ctx));
      await pageAfter(store, after, 0).catch((error: unknown) => {
        place.cancel();
        throw error;
      });
      // The key that opened the stream: the feed ends the stream once it is revoked.
      const key = credentialOf(ctx);
      ctx.respond = false;
      // A reader that goes away mid-stream is how streams end, not an error worth a line.
      const onerror = ctx.onerror.bind(ctx);
      ctx.onerror = (error) => {
        if (!['ECONNRESET', 'EPIPE', 'ECONNABORTED'].includes((error as NodeJS.ErrnoException | null)?.code ?? '')) onerror(error);
      };
      const res = ctx.res;
      // Set one by one (not in writeHead) so that the metrics can read the type back.
      res.setHeader('Content-Type', STREAM_TYPE);
      res.setHeader('Cache-Control', 'no-store');
      // nginx would otherwise hold events back in its buffer.
      res.setHeader('X-Accel-Buffering', 'no');
      res.writeHead(200);
      // How long an EventSource waits before it reconnects (with Last-Event-ID).
      res.write('retry: 1000\n\n');
      place.follow(res, after.seq, key);
      return undefined;
    }
    const { rows, digest } = await pageAfter(store, after, limit);
    const next = rows.length > 0 ? digestOf(rows[rows.length - 1]!) : digest;
    return {
      headers: { 'Cache-Control': 'no-store', Link: `</v1/events?after=${next}&limit=${limit}>; rel="next"` },
      type: 'application/json',
      body: `[${rows.map(eventJson).join(',')}]`,
    };
  };
  return [
    {
      method: 'GET',
      template: '/v1/events',
      operation: 'followEvents',
      rules: feedRules(openapi),
      stages: [readsOnNextTurn],
      handler: withInput(feedInput(openapi), handler),
    },
  ];
}
