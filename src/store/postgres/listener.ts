// The LISTEN connection of an instance: a connection of its own (not the pool's) that
// listens on the change and key channels, reads both current values after LISTEN (so a
// commit between the two is heard or read, never lost), proves itself alive with a
// heartbeat (listener-heartbeat.ts), and reconnects by itself when it is lost or falls
// silent.
import pg from 'pg';
import { CONNECT_TIMEOUT_MS, connectionOf, QUERY_TIMEOUT_MS, sessionSettings } from './connection.ts';
import { startHeartbeat, type Heartbeat } from './listener-heartbeat.ts';

const RECONNECT_MS = 1_000;

/** The channels listened on, and the SQL expression every heartbeat reads. */
interface ListenTo {
  changesChannel: string;
  keysChannel: string;
  probe: string;
  /** A value heard or read on the change channel (chain_head.changes). */
  onChanges(value: bigint): void;
  /** A value heard or read on the key channel (the key chain's seq). */
  onKeys(seq: bigint): void;
}

interface Listener {
  /** Connected, listening, and its heartbeat started. */
  listening(): boolean;
  /** When listening last started or stopped (ms since the epoch). */
  since(): number;
  heartbeat(): Heartbeat | undefined;
  close(): Promise<void>;
}

function listenerClient(url: string): pg.Client {
  return new pg.Client({
    ...connectionOf(url),
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    // A server that falls silent while we start listening fails the start (and we try
    // again) instead of leaving us waiting forever.
    query_timeout: QUERY_TIMEOUT_MS,
    application_name: 'petstore-inventory listener',
    // TCP keepalive on both ends, as on every connection of ours.
    ...sessionSettings(),
  });
}

/** Frees a connection that is gone already, or silent; an error doing so says nothing new.
 * A silent server never answers the goodbye: the socket is destroyed rather than left waiting. */
function drop(c: pg.Client): void {
  c.end().catch(() => {});
  (c as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
}

/** A notification on one of the channels: its value (a number) to the listener of that channel. */
function hear(message: pg.Notification, to: ListenTo): void {
  if (!message.payload || !/^\d+$/.test(message.payload)) return;
  if (message.channel === to.changesChannel) to.onChanges(BigInt(message.payload));
  else if (message.channel === to.keysChannel) to.onKeys(BigInt(message.payload));
}

/** LISTEN on a connected client, then the current values read after it. */
async function listenOn(c: pg.Client, to: ListenTo): Promise<void> {
  await c.query(`LISTEN ${to.changesChannel}; LISTEN ${to.keysChannel}`);
  const { rows } = await c.query<{ changes: string; keys: string }>(
    'SELECT (SELECT changes::text FROM chain_head) AS changes, (SELECT seq::text FROM key_chain_head) AS keys',
  );
  to.onChanges(BigInt(rows[0]!.changes));
  to.onKeys(BigInt(rows[0]!.keys));
}

export function startListener(url: string, to: ListenTo): Listener {
  let listening = false;
  let closed = false;
  let client: pg.Client | undefined;
  let heartbeat: Heartbeat | undefined;
  let retry: NodeJS.Timeout | undefined;
  let since = Date.now();
  const setListening = (value: boolean) => {
    if (value !== listening) since = Date.now();
    listening = value;
  };
  const connect = async () => {
    if (closed) return;
    const c = listenerClient(url);
    client = c;
    const lost = () => {
      if (client !== c) return;
      setListening(false);
      client = undefined;
      heartbeat?.stop();
      heartbeat = undefined;
      drop(c);
      if (!closed) retry = setTimeout(() => void connect(), RECONNECT_MS).unref();
    };
    c.on('error', lost);
    c.on('end', lost);
    c.on('notification', (message) => hear(message, to));
    try {
      await c.connect();
      await listenOn(c, to);
      const beat = await startHeartbeat(c, lost, Date.now, to.probe);
      if (client !== c) beat.stop();
      else {
        heartbeat = beat;
        setListening(true);
      }
    } catch {
      // Cannot listen now (the server is down or refuses): the watcher reads chain_head
      // meanwhile, and lost() tries again in a second.
      lost();
    }
  };
  void connect();
  return {
    listening: () => listening,
    since: () => since,
    heartbeat: () => heartbeat,
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
