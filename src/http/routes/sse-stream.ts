// One change feed stream as Server-Sent Events on an HTTP response: its cursor (the last
// seq it was sent), what its reader has not taken yet (back-pressure: a reader too far
// behind is cut off and resumes from its last id), its heartbeat and its lifetime (past
// it, the stream ends with a retry hint and its reader reconnects from its last id).
import type { ServerResponse } from 'node:http';
import type { FeedStream, OnFinish } from '../../feed/feed-stream.ts';
import type { FeedLimits } from '../../feed/limits.ts';

/** Sent before a stream ends at its lifetime: how long an EventSource waits before it
 * reconnects with Last-Event-ID (the same hint that opens every stream). */
const RETRY_HINT = 'retry: 1000\n\n';

type StreamLimits = Pick<FeedLimits, 'maxBehindBytes' | 'maxBehindMs' | 'maxLifetimeMs' | 'heartbeatMs'>;

interface StreamDeps {
  limits: StreamLimits;
  now: () => number;
  /** Told once, when the stream ends. */
  onFinish: OnFinish;
  /** A number in [0, 1): shortens each stream's lifetime by up to a tenth, so that streams
   * opened together (after a restart) do not all reconnect together again. */
  random?: () => number;
}

// The place is free already; the connection goes once its reader took the end, or after
// as long as a reader may be behind, if it does not.
function endWithRetry(res: ServerResponse, behind: boolean, maxBehindMs: number): void {
  if (behind) {
    res.destroy();
    return;
  }
  res.end(RETRY_HINT);
  const cutOff = setTimeout(() => res.destroy(), maxBehindMs).unref();
  res.once('finish', () => clearTimeout(cutOff));
  res.once('close', () => clearTimeout(cutOff));
}

function endWhenReaderGoes(res: ServerResponse, stream: FeedStream, heartbeatMs: number): void {
  // A reader that left while the stream was admitted never hears its close.
  if (res.closed || res.socket === null || res.socket.destroyed) {
    stream.finish('client');
    return;
  }
  res.once('close', () => stream.finish('client'));
  // The server keeps half-closed connections open (a PATCH's answer still goes out), so a
  // reader that hung up would hold its place until the next write failed.
  res.socket?.once('end', () => stream.finish('client'));
  // A peer that vanished without a word (a host gone, a dropped route) is found by the
  // kernel's probes as well as by a heartbeat that is never acknowledged.
  res.socket?.setKeepAlive(true, heartbeatMs);
}

function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

export function makeSseStream(res: ServerResponse, key: string, after: bigint, deps: StreamDeps): FeedStream {
  const { limits, now, onFinish, random = Math.random } = deps;
  let cursor = after;
  let done = false;
  /** Since when output waits for the reader (write() said so), until 'drain'. */
  let behindSince: number | undefined;
  let lastWrite = now();
  const endsAt = now() + limits.maxLifetimeMs * (1 - random() / 10);

  const write = (text: string | Buffer) => {
    if (done) return;
    const ok = res.write(text);
    lastWrite = now();
    if (!ok) behindSince ??= now();
    if (res.writableLength > limits.maxBehindBytes) stream.finish('behind');
  };

  const stream: FeedStream = {
    key,
    cursor: () => cursor,
    live: false,
    done: () => done,
    send({ rows, texts, all }) {
      let first = 0;
      while (first < rows.length && rows[first]![0] <= cursor) first++;
      if (first === rows.length) return 0;
      // Live streams are nearly always at the tail, and streams catching up together at
      // the same page: the bytes encoded once serve them all.
      write(first === 0 ? all : texts.slice(first).join(''));
      cursor = rows[rows.length - 1]![0];
      return rows.length - first;
    },
    tick(at) {
      if (at >= endsAt) stream.finish('lifetime');
      else if (behindSince !== undefined && at - behindSince > limits.maxBehindMs) stream.finish('behind');
      else if (at - lastWrite >= limits.heartbeatMs) write(':\n\n');
    },
    finish(reason) {
      if (done) return;
      done = true;
      stream.live = false;
      onFinish(stream, reason);
      // A reader that is behind (or an error) loses the buffered rest: it resumes from its
      // last id. Otherwise the stream ends cleanly after what it was sent.
      if (reason === 'behind' || reason === 'error') res.destroy();
      else if (reason === 'lifetime') endWithRetry(res, behindSince !== undefined, limits.maxBehindMs);
      else res.end();
    },
    readerBehind: () => res.writableNeedDrain,
    readerCaughtUp: () => drained(res),
  };
  res.on('drain', () => (behindSince = undefined));
  endWhenReaderGoes(res, stream, limits.heartbeatMs);
  return stream;
}
