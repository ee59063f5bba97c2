// The change token across instances. Every transaction that may change what readers see
// increments chain_head.changes and sends its new value with NOTIFY (delivered at
// COMMIT). Each instance LISTENs on a connection of its own and keeps the highest value
// it heard, so a GET learns that another instance committed without a query. While that
// connection is down (a restart, a network cut) the token is read from chain_head on
// every call instead, and the listener (listener.ts) reconnects by itself; nothing is
// missed, since it reads the current value again each time it (re)starts listening. A connection that
// falls silent without closing is caught by a heartbeat (listener-heartbeat.ts): while
// one is overdue the token is read as when the connection is down, and a connection
// silent for longer is replaced. A process that does not follow other processes' commits
// (an operator command) opens no listening connection: it reads the token every time.
// The same connection hears key changes (KEYS_CHANNEL, with the key chain's new seq),
// which key-memory.ts serves from memory only while a heartbeat sent within
// KEYS_FRESH_MS has come back: then every key change committed more than KEYS_FRESH_MS
// ago has been heard. A key row edited behind the triggers sends no notification: each
// heartbeat also reads a digest of the key tables (KEYS_DIGEST_SQL), and key-memory.ts
// trusts its memory only while it matches the digest of a heartbeat sent within
// KEYS_FRESH_MS.
import type pg from 'pg';
import type { NotificationStatus } from '../health.ts';
import { OVERDUE_MS, type Probe } from './listener-heartbeat.ts';
import { startListener } from './listener.ts';

export const CHANGES_CHANNEL = 'inventory_changes';
export const KEYS_CHANNEL = 'inventory_keys';
/** How late a key change may be seen by another instance (ms). */
export const KEYS_FRESH_MS = 100;
/** What the key tables hold, as one text: the key chain's head (seq and hash) and every
 * row of the key log and of api_keys. Any edit changes it, announced or not. */
export const KEYS_DIGEST_SQL = `SELECT md5(concat_ws(E'\\n\\n',
    (SELECT seq::text || ':' || hash FROM key_chain_head),
    (SELECT string_agg(e::text, E'\\n' ORDER BY e.seq) FROM api_key_events e),
    (SELECT string_agg(k::text, E'\\n' ORDER BY k.name) FROM api_keys k)))`;

export interface ChangeWatch {
  token(): Promise<string>;
  /** The token while notifications prove it current; undefined otherwise. */
  tokenNow(): string | undefined;
  /** This instance committed: its own next request must see it without waiting for NOTIFY. */
  saw(changes: bigint): void;
  /** The key chain's seq as far as heard, while notifications prove current (a heartbeat
   * sent within KEYS_FRESH_MS came back); undefined while they do not. */
  keysSeq(): bigint | undefined;
  /** The key tables' digest (KEYS_DIGEST_SQL) as read by the newest heartbeat that
   * answered, while that heartbeat was sent within KEYS_FRESH_MS; undefined otherwise. */
  keysRead(): Probe | undefined;
  /** This instance changed a key (seq in the key chain): its own next request must see it. */
  sawKeys(seq: bigint): void;
  /** The listening connection's state and the last change seen, for readiness. */
  status(): NotificationStatus;
  close(): Promise<void>;
}

export function watchChanges(url: string, pool: pg.Pool, listen = true): ChangeWatch {
  let known = -1n;
  let keysKnown = -1n;
  const startedAt = Date.now();
  // When the token last moved (a commit seen).
  let changedAt: number | undefined;
  const note = (value: bigint) => {
    // The first value is read at start: it says nothing of when that commit was.
    if (value > known && known >= 0n) changedAt = Date.now();
    if (value > known) known = value;
  };
  const noteKeys = (seq: bigint) => {
    if (seq > keysKnown) keysKnown = seq;
  };
  const listener = listen
    ? startListener(url, {
        changesChannel: CHANGES_CHANNEL,
        keysChannel: KEYS_CHANNEL,
        probe: KEYS_DIGEST_SQL,
        onChanges: note,
        onKeys: noteKeys,
      })
    : undefined;
  const listening = () => listener?.listening() === true;
  const heartbeat = () => listener?.heartbeat();
  const trusted = () => listening() && heartbeat()?.overdue() === false;
  const current = async () => (await pool.query<{ changes: bigint }>('SELECT changes FROM chain_head')).rows[0]!.changes;

  return {
    async token() {
      if (!trusted()) note(await current());
      return String(known);
    },
    tokenNow: () => (trusted() ? String(known) : undefined),
    saw: note,
    keysSeq() {
      const beat = heartbeat();
      return listening() && beat !== undefined && beat.sentHeardAt() >= Date.now() - KEYS_FRESH_MS ? keysKnown : undefined;
    },
    keysRead() {
      const read = listening() ? heartbeat()?.probed() : undefined;
      return read !== undefined && read.sentAt >= Date.now() - KEYS_FRESH_MS ? read : undefined;
    },
    sawKeys: noteKeys,
    status() {
      const heard = heartbeat()?.lastHeardAt();
      const overdue = listening() && heartbeat()?.overdue() === true;
      return {
        state: !listening() ? 'down' : overdue ? 'overdue' : 'up',
        since: new Date(overdue ? heard! + OVERDUE_MS : (listener?.since() ?? startedAt)).toISOString(),
        lastHeartbeatAt: heard === undefined ? null : new Date(heard).toISOString(),
        lastCommitSeenAt: changedAt === undefined ? null : new Date(changedAt).toISOString(),
        lastCommitSeenAgeSeconds: changedAt === undefined ? null : (Date.now() - changedAt) / 1000,
      };
    },
    close: async () => listener?.close(),
  };
}
