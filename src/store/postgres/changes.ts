// The change token across instances. Every transaction that may change what readers see
// increments chain_head.changes and sends its new value with NOTIFY (delivered at
// COMMIT). Each instance LISTENs on a connection of its own and keeps the highest value
// it heard, so a GET learns that another instance committed without a query. While that
// connection is down (a restart, a network cut) the token is read from chain_head on
// every call instead, and the listener reconnects by itself; nothing is missed, since it
// reads the current value again each time it (re)starts listening. A connection that
// falls silent without closing is caught by a heartbeat (listener-heartbeat.ts): while
// one is overdue the token is read as when the connection is down, and a connection
// silent for longer is replaced. A process that does not follow other processes' commits
// (an operator command) opens no listening connection: it reads the token every time.
// The same connection hears key changes (KEYS_CHANNEL, with the key chain's new seq),
// which keys.ts serves from memory only while a heartbeat sent within KEYS_FRESH_MS has
// come back: then every key change committed more than KEYS_FRESH_MS ago has been heard.
// A key row edited behind the triggers sends no notification: each heartbeat also reads a
// digest of the key tables (KEYS_DIGEST_SQL), and keys.ts trusts its memory only while it
// matches the digest of a heartbeat sent within KEYS_FRESH_MS.
import pg from 'pg';
import type { NotificationStatus } from '../health.ts';
import { CONNECT_TIMEOUT_MS, connectionOf, QUERY_TIMEOUT_MS, sessionSettings } from './connection.ts';
import { OVERDUE_MS, startHeartbeat, type Heartbeat, type Probe } from './listener-heartbeat.ts';

export const CHANGES_CHANNEL = 'inventory_changes';
export const KEYS_CHANNEL = 'inventory_keys';
/** How late a key change may be seen by another instance (ms). */
export const KEYS_FRESH_MS = 100;
const RECONNECT_MS = 1_000;
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
  let listening = false;
  let closed = false;
  let client: pg.Client | undefined;
  let heartbeat: Heartbeat | undefined;
  let retry: NodeJS.Timeout | undefined;
  // When listening last started or stopped, and when the token last moved (a commit seen).
  let since = Date.now();
  let changedAt: number | undefined;
  const setListening = (value: boolean) => {
    if (value !== listening) since = Date.now();
    listening = value;
  };
  const note = (value: bigint) => {
    // The first value is read at start: it says nothing of when that commit was.
    if (value > known && known >= 0n) changedAt = Date.now();
    if (value > known) known = value;
  };
  const noteKeys = (seq: bigint) => {
    if (seq > keysKnown) keysKnown = seq;
  };
  const trusted = () => listening && heartbeat?.overdue() === false;
  const current = async () => (await pool.query<{ changes: bigint }>('SELECT changes FROM chain_head')).rows[0]!.changes;

  const connect = async () => {
    if (closed) return;
    const c = new pg.Client({
      ...connectionOf(url),
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      // A server that falls silent while we start listening fails the start (and we try
      // again) instead of leaving us waiting forever.
      query_timeout: QUERY_TIMEOUT_MS,
      application_name: 'petstore-inventory listener',
      // TCP keepalive on both ends, as on every connection of ours.
      ...sessionSettings(),
    });
    client = c;
    const lost = () => {
      if (client !== c) return;
      setListening(false);
      client = undefined;
      heartbeat?.stop();
      heartbeat = undefined;
      // The connection is gone already, or silent; ending it only frees its socket, and
      // an error doing so says nothing new. A silent server never answers the goodbye:
      // the socket is destroyed rather than left waiting. A new one is made below.
      c.end().catch(() => {});
      (c as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
      if (!closed) retry = setTimeout(() => void connect(), RECONNECT_MS).unref();
    };
    c.on('error', lost);
    c.on('end', lost);
    c.on('notification', (message) => {
      if (!message.payload || !/^\d+$/.test(message.payload)) return;
      if (message.channel === CHANGES_CHANNEL) note(BigInt(message.payload));
      else if (message.channel === KEYS_CHANNEL) noteKeys(BigInt(message.payload));
    });
    try {
      await c.connect();
      await c.query(`LISTEN ${CHANGES_CHANNEL}; LISTEN ${KEYS_CHANNEL}`);
      // Read after LISTEN: a commit between the two is heard or read, never lost.
      const { rows } = await c.query<{ changes: string; keys: string }>(
        'SELECT (SELECT changes::text FROM chain_head) AS changes, (SELECT seq::text FROM key_chain_head) AS keys',
      );
      note(BigInt(rows[0]!.changes));
      noteKeys(BigInt(rows[0]!.keys));
      const beat = await startHeartbeat(c, lost, Date.now, KEYS_DIGEST_SQL);
      if (client !== c) beat.stop();
      else {
        heartbeat = beat;
        setListening(true);
      }
    } catch {
      // Cannot listen now (the server is down or refuses): token() reads chain_head
      // meanwhile, and lost() tries again in a second.
      lost();
    }
  };
  if (listen) void connect();

  return {
    async token() {
      if (!trusted()) note(await current());
      return String(known);
    },
    tokenNow: () => (trusted() ? String(known) : undefined),
    saw: note,
    keysSeq: () => (listening && heartbeat !== undefined && heartbeat.sentHeardAt() >= Date.now() - KEYS_FRESH_MS ? keysKnown : undefined),
    keysRead() {
      const read = listening ? heartbeat?.probed() : undefined;
      return read !== undefined && read.sentAt >= Date.now() - KEYS_FRESH_MS ? read : undefined;
    },
    sawKeys: noteKeys,
    status() {
      const heard = heartbeat?.lastHeardAt();
      const overdue = listening && heartbeat?.overdue() === true;
      return {
        state: !listening ? 'down' : overdue ? 'overdue' : 'up',
        since: new Date(overdue ? heard! + OVERDUE_MS : since).toISOString(),
        lastHeartbeatAt: heard === undefined ? null : new Date(heard).toISOString(),
        lastCommitSeenAt: changedAt === undefined ? null : new Date(changedAt).toISOString(),
        lastCommitSeenAgeSeconds: changedAt === undefined ? null : (Date.now() - changedAt) / 1000,
      };
    },
    async close() {
      closed = true;
      clearTimeout(retry);
      heartbeat?.stop();
      const c = client;
      client = undefined;
      setListening(false);
      // Closing: a connection that fails to end cleanly is closed all the same.
      await c?.end().catch(() => {});
    },
  };
}
