// What the feed refuses, in its own words: the HTTP edge decides the status and headers
// (the feed knows nothing of HTTP).

/** The query names something the feed does not take (an unknown parameter, a bad cursor or limit). */
export class FeedQueryInvalid extends Error {
  override name = 'FeedQueryInvalid';
}

/** The cursor is past the log's head, or names an event of another log. */
export class CursorRefused extends Error {
  override name = 'CursorRefused';
  constructor(
    readonly reason: 'past_head' | 'not_in_log',
    message: string,
  ) {
    super(message);
  }
}

/** No stream can be opened now: this process is shutting down, or has all it may hold. */
export class FeedUnavailable extends Error {
  override name = 'FeedUnavailable';
  constructor(
    readonly reason: 'shutting_down' | 'full',
    message: string,
  ) {
    super(message);
  }
}

/** The key asking has all the streams one key may hold open in this process. */
export class FeedKeyFull extends Error {
  override name = 'FeedKeyFull';
}
