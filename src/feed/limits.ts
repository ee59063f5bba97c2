// The bounds of the change feed in one process, and their defaults.

export interface FeedLimits {
  /** Streams open at once in this process; one more is refused (FeedUnavailable). */
  maxStreams: number;
  /** Streams one key may hold open at once in this process; one more is refused (FeedKeyFull). */
  maxStreamsPerKey: number;
  /** Bytes a stream's reader may leave waiting in this process before it is cut off. */
  maxBehindBytes: number;
  /** How long a stream's output may wait for its reader before it is cut off. */
  maxBehindMs: number;
  /** The longest a stream stays open: then it ends with a retry hint and its reader
   * reconnects from its last id. What the kernel holds for a reader that stopped reading
   * is invisible to this process; this bound is what frees its place whatever it does. */
  maxLifetimeMs: number;
  /** A comment line goes to a stream that was sent nothing for this long. */
  heartbeatMs: number;
  /** How often the store's change token is looked at (commits of other processes). */
  pollMs: number;
  /** How often the keys of open streams are checked (revocation). */
  keyCheckMs: number;
  /** After this process commits, the hub reads at most once in this long: under a stream
   * of writes, each read (and each stream's write) then carries many commits, not one. */
  commitReadGapMs: number;
  /** At shutdown, how long a stream may take to receive what was committed. */
  closeGraceMs: number;
}

export const DEFAULT_FEED_LIMITS: FeedLimits = {
  maxStreams: 256,
  maxStreamsPerKey: 16,
  maxBehindBytes: 1024 * 1024,
  maxBehindMs: 30_000,
  maxLifetimeMs: 300_000,
  heartbeatMs: 15_000,
  pollMs: 100,
  keyCheckMs: 500,
  commitReadGapMs: 10,
  closeGraceMs: 5_000,
};
