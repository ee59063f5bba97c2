// A Server-Sent Events reader for tests, on node:http: it keeps every message as it
// arrived (id, event, the data parsed with big integers as text) and can wait for a
// count, for the end, or reconnect from its last id as an EventSource would.
import { request as httpRequest, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';

interface SseMessage {
  id: string;
  event: string;
  data: string;
  /** When it arrived (performance.now()). */
  at: number;
}

export interface SseStream {
  status: number;
  headers: IncomingHttpHeaders;
  messages: SseMessage[];
  /** Comment lines seen (heartbeats). */
  comments: number;
  /** The `retry:` fields seen, in order, and the messages received before each. */
  retries: { value: string; after: number }[];
  /** Resolves when the server ended the stream (or the connection closed). */
  ended: Promise<void>;
  isEnded(): boolean;
  /** Resolves once `count` messages arrived; rejects after timeoutMs. */
  waitFor(count: number, timeoutMs?: number): Promise<void>;
  /** Resolves once a message with this seq (its id's first part) arrived; rejects after timeoutMs. */
  waitForSeq(seq: bigint, timeoutMs?: number): Promise<void>;
  close(): void;
}

export function openStream(port: number, path: string, headers: Record<string, string>): Promise<SseStream> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, headers: { Accept: 'text/event-stream', ...headers }, agent: false });
    req.on('error', reject);
    req.on('response', (res: IncomingMessage) => {
      const messages: SseMessage[] = [];
      let buffer = '';
      let ended = false;
      let comments = 0;
      const retries: SseStream['retries'] = [];
      const waiters: (() => void)[] = [];
      const poke = () => waiters.splice(0).forEach((w) => w());
      const until = (arrived: () => boolean, what: string, timeoutMs: number) =>
        new Promise<void>((ok, fail) => {
          const timer = setTimeout(() => fail(new Error(`not ${what} in ${messages.length} messages after ${timeoutMs} ms`)), timeoutMs);
          const check = () => {
            if (arrived()) {
              clearTimeout(timer);
              ok();
            } else if (ended) {
              clearTimeout(timer);
              fail(new Error(`the stream ended after ${messages.length} messages, without ${what}`));
            } else waiters.push(check);
          };
          check();
        });
      const stream: SseStream = {
        status: res.statusCode!,
        headers: res.headers,
        messages,
        get comments() {
          return comments;
        },
        retries,
        ended: new Promise<void>((done) => {
          const end = () => {
            ended = true;
            done();
            poke();
          };
          res.on('end', end);
          res.on('close', end);
          res.on('error', end);
        }),
        isEnded: () => ended,
        waitFor: (count, timeoutMs = 10_000) => until(() => messages.length >= count, `${count} messages`, timeoutMs),
        waitForSeq: (seq, timeoutMs = 10_000) =>
          until(() => messages.some((m) => m.id.startsWith(`${seq}:`)), `the message of seq ${seq}`, timeoutMs),
        close: () => {
          req.destroy();
          res.destroy();
        },
      };
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buffer += chunk;
        let cut: number;
        while ((cut = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          const fields: Record<string, string> = {};
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) {
              comments++;
              continue;
            }
            const colon = line.indexOf(':');
            const name = colon < 0 ? line : line.slice(0, colon);
            fields[name] = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
          }
          if (fields.retry !== undefined) retries.push({ value: fields.retry, after: messages.length });
          if (fields.data !== undefined)
            messages.push({ id: fields.id ?? '', event: fields.event ?? 'message', data: fields.data, at: performance.now() });
        }
        poke();
      });
      resolve(stream);
    });
    req.end();
  });
}
