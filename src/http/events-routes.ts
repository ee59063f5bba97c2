// GET /v1/events: the change feed. As JSON, one keyset page of the log after a seq; with
// Accept: text/event-stream, a Server-Sent Events stream that sends what the reader
// missed and then every new event (the feed hub, src/feed/hub.ts). Authentication has
// already happened.
import Router from '@koa/router';
import type { Feed } from '../feed/hub.ts';
import { eventJson } from '../feed/event-json.ts';
import { readFeedQuery } from '../feed/position.ts';
import type { EventLog } from '../store/event-log.ts';

export interface EventsDeps {
  store: Pick<EventLog, 'eventsAfter'>;
  feed: Feed;
}

export function eventsRouter({ store, feed }: EventsDeps): Router {
  const router = new Router({ prefix: '/v1', sensitive: true, strict: true });

  router.get('/events', async (ctx) => {
    ctx.vary('Accept');
    const stream = ctx.method === 'GET' && ctx.accepts('application/json', 'text/event-stream') === 'text/event-stream';
    const { after, limit } = readFeedQuery(ctx.query, stream ? ctx.get('Last-Event-ID') || undefined : undefined);
    if (stream) {
      feed.admit();
      // The key that opened the stream: the feed ends the stream once it is revoked.
      const key = ctx.get('Authorization').trim().split(/ +/)[1]!;
      ctx.respond = false;
      // A reader that goes away mid-stream is how streams end, not an error worth a line.
      const onerror = ctx.onerror.bind(ctx);
      ctx.onerror = (error) => {
        if (!['ECONNRESET', 'EPIPE', 'ECONNABORTED'].includes((error as NodeJS.ErrnoException | null)?.code ?? '')) onerror(error);
      };
      const res = ctx.res;
      res.writeHead(200, {
        'Content-Type': 'text/event-stream; charset=utf-8',
        'Cache-Control': 'no-store',
        // nginx would otherwise hold events back in its buffer.
        'X-Accel-Buffering': 'no',
      });
      // How long an EventSource waits before it reconnects (with Last-Event-ID).
      res.write('retry: 1000\n\n');
      feed.follow(res, after, key);
      return;
    }
    const rows = await store.eventsAfter(after, limit);
    const last = rows.length > 0 ? rows[rows.length - 1]![0] : after;
    ctx.set('Cache-Control', 'no-store');
    ctx.set('Link', `</v1/events?after=${last}&limit=${limit}>; rel="next"`);
    ctx.type = 'application/json';
    ctx.body = `[${rows.map(eventJson).join(',')}]`;
  });

  return router;
}
