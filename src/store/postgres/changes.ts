// The change token across instances. Every transaction that may change what readers see
// increments chain_head.changes and sends its new value with NOTIFY (delivered at
// COMMIT). Each instance LISTENs on a connection of its own and keeps the highest value
// it heard, so a GET learns that another instance committed without a query. While that
// connection is down (a restart, a network cut) the token is read from chain_head on
// every call instead, and the listener reconnects by itself; nothing is missed, since it
// reads the current value again each time it (re)starts listening.
import pg from 'pg';
import { CONNECT_TIMEOUT_MS } from './connection.ts';

export const CHANGES_CHANNEL = 'inventory_changes';
const RECONNECT_MS = 1_000;

export interface ChangeWatch {
  token(): Promise<string>;
  /** This instance committed: its own next request must see it without waiting for NOTIFY. */
  saw(changes: bigint): void;
  /** Whether notifications are being received now (for tests and readiness detail). */
  listening(): boolean;
  close(): Promise<void>;
}

export function watchChanges(url: string, pool: pg.Pool): ChangeWatch {
  let known = -1n;
  let listening = false;
  let closed = false;
  let client: pg.Client | undefined;
  let retry: NodeJS.Timeout | undefined;
  const note = (value: bigint) => {
    if (value > known) known = value;
  };
  const current = async () => (await pool.query<{ changes: bigint }>('SELECT changes FROM chain_head')).rows[0]!.changes;

  const connect = async () => {
    if (closed) return;
    const c = new pg.Client({
      connectionString: url,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      application_name: 'petstore-inventory listener',
    });
    client = c;
    const lost = () => {
      if (client !== c) return;
      listening = false;
      client = undefined;
      // The connection is gone already; ending it only frees its socket, and an error
      // doing so says nothing new. A new one is made below.
      c.end().catch(() => {});
      if (!closed) retry = setTimeout(() => void connect(), RECONNECT_MS).unref();
    };
    c.on('error', lost);
    c.on('end', lost);
    c.on('notification', (message) => {
      if (message.channel === CHANGES_CHANNEL && message.payload && /^\d+$/.test(message.payload)) note(BigInt(message.payload));
    });
    try {
      await c.connect();
      await c.query(`LISTEN ${CHANGES_CHANNEL}`);
      // Read after LISTEN: a commit between the two is heard or read, never lost.
      note(BigInt((await c.query<{ changes: string }>('SELECT changes::text FROM chain_head')).rows[0]!.changes));
      if (client === c) listening = true;
    } catch {
      // Cannot listen now (the server is down or refuses): token() reads chain_head
      // meanwhile, and lost() tries again in a second.
      lost();
    }
  };
  void connect();

  return {
    async token() {
      if (!listening) note(await current());
      return String(known);
    },
    saw: note,
    listening: () => listening,
    async close() {
      closed = true;
      clearTimeout(retry);
      const c = client;
      client = undefined;
      listening = false;
      // Closing: a connection that fails to end cleanly is closed all the same.
      await c?.end().catch(() => {});
    },
  };
}
