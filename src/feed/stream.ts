// One change feed stream: its cursor (the last seq it was sent), what its reader has not
// taken yet (back-pressure: a reader too far behind is cut off and resumes from its last
// id), its heartbeat and its lifetime (past it, the stream ends with a retry hint and its
// reader reconnects from its last id).
import type { ServerResponse } from 'node:http';
import type { ChainRow } from '../store/event-log.ts';
import { sseMessage } from './event-json.ts';

export type CloseReason = 'client' | 'behind' | 'lifetime' | 'revoked' | 'shutdown' | 'error';
export const CLOSE_REASONS: readonly CloseReason[] = ['client', 'behind', 'lifetime', 'revoked', 'shutdown', 'error'];

/** Sent before a stream ends at its lifetime: how long an EventSource waits before it
 * reconnects with Last-Event-ID (the same hint that opens every stream). */
export const RETRY_HINT = 'retry: 1000\n\n';

/** Rows rendered once for every stream they go to: each row's message, and all of them as bytes. */
export interface Rendered {
  rows: readonly ChainRow[];
  texts: readonly string[];
  all: Buffer;
}

export function render(rows: readonly ChainRow[]): Rendered {
  const texts = rows.map(sseMessage);
  return { rows, texts, all: Buffer.from(texts.join('')) };
}

interface StreamLimits {
  maxBehindBytes: number;
  maxBehindMs: number;
  maxLifetimeMs: number;
  heartbeatMs: number;
}

export interface Stream {
  readonly res: ServerResponse;
  readonly key: string;
  /** The last seq sent. */
  readonly cursor: () => bigint;
  /** Whether the tail publisher sends it what it reads (its catch-up is over). */
  live: boolean;
  readonly done: () => boolean;
  /** The catch-up under way, if any. */
  pump?: Promise<void>;
  /** Sends the rows after its cursor; returns how many it sent. */
  send(page: Rendered): number;
  /** Ends a stream past its lifetime; cuts off a reader behind for too long; sends a
   * heartbeat to a stream sent nothing for long. */
  tick(at: number): void;
  /** Ends the stream (once). */
  finish(reason: CloseReason): void;
}

interface StreamDeps {
  limits: StreamLimits;
  now: () => number;
  /** Told once, when the stream ends. */
  onFinish: (stream: Stream, reason: CloseReason) => void;
  /** A number in [0, 1): shortens each stream's lifetime by up to a tenth, so that streams
   * opened together (after a restart) do not all reconnect together again. */
  random?: () => number;
}

export function makeStream(res: ServerResponse, key: string, after: bigint, deps: StreamDeps): Stream {
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

  // The place is free already; the connection goes once its reader took the end, or after
  // as long as a reader may be behind, if it does not.
  const endWithRetry = () => {
    if (behindSince !== undefined) return res.destroy();
    res.end(RETRY_HINT);
    const cutOff = setTimeout(() => res.destroy(), limits.maxBehindMs).unref();
    res.once('finish', () => clearTimeout(cutOff));
    res.once('close', () => clearTimeout(cutOff));
  };

  const stream: Stream = {
    res,
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
      else if (reason === 'lifetime') endWithRetry();
      else res.end();
    },
  };
  res.on('drain', () => (behindSince = undefined));
  res.once('close', () => stream.finish('client'));
  // The server keeps half-closed connections open (a PATCH's answer still goes out), so a
  // reader that hung up would hold its place until the next write failed.
  res.socket?.once('end', () => stream.finish('client'));
  // A peer that vanished without a word (a host gone, a dropped route) is found by the
  // kernel's probes as well as by a heartbeat that is never acknowledged.
  res.socket?.setKeepAlive(true, limits.heartbeatMs);
  return stream;
}
