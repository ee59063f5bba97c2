// What the feed asks of one stream it follows the log for, whatever carries it to its
// reader (the HTTP edge writes it as Server-Sent Events): its cursor, whether it is live,
// sending a page, its reader's pace and its end. And the pages the feed renders once for
// every stream they go to.
import type { ChainRow } from '../store/event-log.ts';
import { sseMessage } from './event-json.ts';

export type CloseReason = 'client' | 'behind' | 'lifetime' | 'revoked' | 'shutdown' | 'error';
export const CLOSE_REASONS: readonly CloseReason[] = ['client', 'behind', 'lifetime', 'revoked', 'shutdown', 'error'];

/** Rows rendered once for every stream they go to: each row's message, and all of them as bytes. */
export interface RenderedPage {
  rows: readonly ChainRow[];
  texts: readonly string[];
  all: Buffer;
}

export function renderPage(rows: readonly ChainRow[]): RenderedPage {
  const texts = rows.map(sseMessage);
  return { rows, texts, all: Buffer.from(texts.join('')) };
}

export interface FeedStream {
  readonly key: string;
  /** The last seq sent. */
  readonly cursor: () => bigint;
  /** Whether the tail publisher sends it what it reads (its catch-up is over). */
  live: boolean;
  readonly done: () => boolean;
  /** The catch-up under way, if any. */
  pump?: Promise<void>;
  /** Sends the rows after its cursor; returns how many it sent. */
  send(page: RenderedPage): number;
  /** Ends a stream past its lifetime; cuts off a reader behind for too long; sends a
   * heartbeat to a stream sent nothing for long. */
  tick(at: number): void;
  /** Ends the stream (once). */
  finish(reason: CloseReason): void;
  /** Whether its reader has not yet taken what it was sent. */
  readerBehind(): boolean;
  /** Settles once its reader took what it was sent, or went away. */
  readerCaughtUp(): Promise<void>;
}

/** Told once, when a stream ends. */
export type OnFinish = (stream: FeedStream, reason: CloseReason) => void;
