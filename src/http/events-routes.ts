// GET /v1/events: the change feed. As JSON, one keyset page of the log after a cursor;
// with Accept: text/event-stream, a Server-Sent Events stream that sends what the reader
// missed and then every new event (the feed hub, feed-hub.ts). Either way a cursor
// that is past the head or not in this log is refused (409), never followed in silence.
// Authentication has already happened: the verified key is on ctx.state.
import type { Feed } from './feed-hub.ts';
import { digestOf, eventJson } from '../feed/event-json.ts';
import { pageAfter, readFeedQuery, wantsStream, type CursorStore } from '../feed/position.ts';
import type { Route } from './router.ts';

export interface EventsDeps {
  store: CursorStore;
  feed: Feed;
}

/** What a stream's response is: the request-duration histogram leaves it out (a
 * stream's lifetime is not a latency). */
export const STREAM_TYPE = 'text/event-stream; charset=utf-8';

export function eventsRoutes({ store, feed }: EventsDeps): Route[] {
  const handler: Route['handler'] = async (ctx) => {
    ctx.vary('Accept');
    const stream = ctx.method === 'GET' && wantsStream(ctx.get('Accept'));
    // Last-Event-ID is an EventSource's header: pages go by after (and Link) alone.
    const { after, limit } = readFeedQuery(ctx.query, stream ? ctx.get('Last-Event-ID') : undefined);
    if (stream) {
      await pageAfter(store, after, 0);
      feed.admit();
      // The key that opened the stream: the feed ends the stream once it is revoked.
      const key = ctx.state.credential as string;
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
      feed.follow(res, after.seq, key);
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
  return [{ method: 'GET', template: '/v1/events', handler }];
}
