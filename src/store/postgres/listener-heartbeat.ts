// Liveness of the LISTEN connection. A connection can fall silent without closing: its
// server process stopped, or a firewall that drops its packets without a reset. No
// 'error' or 'end' comes then, notifications just stop, and an instance trusting its
// cached list would serve it as current forever. So the listener notifies itself, on a
// channel of its own, every HEARTBEAT_MS: hearing its heartbeat come back proves that
// notifications still reach it. One overdue (OVERDUE_MS) and the watcher stops trusting
// the connection (it reads chain_head instead); past DEAD_MS it gives the connection up.
// Each heartbeat carries when it was sent: one sent at t and heard back proves that every
// notification committed before t has been heard (a connection delivers notifications in
// commit order), which is what lets keys be trusted from memory (sentHeardAt). A heartbeat
// may also read a value (probe) in its statement: a value read after the heartbeat was
// sent, which notifications cannot vouch for when the change behind it sent none (a row
// edited behind the triggers).
import { randomBytes } from 'node:crypto';
import type pg from 'pg';

// Often enough that one sent within KEYS_FRESH_MS is normally back (key-memory.ts).
const HEARTBEAT_MS = 30;
export const OVERDUE_MS = 1_500;
const DEAD_MS = 4_000;

/** A value a heartbeat's statement read, and when that heartbeat was sent (ms since the epoch). */
export interface Probe {
  sentAt: number;
  value: string;
}

export interface Heartbeat {
  /** When the last heartbeat came back (ms since the epoch), or when it started. */
  lastHeardAt(): number;
  /** When the newest heartbeat heard back was sent (ms since the epoch, by now()). */
  sentHeardAt(): number;
  overdue(): boolean;
  /** The probe's value as the newest heartbeat that answered read it; a new object each time. */
  probed(): Probe | undefined;
  stop(): void;
}

/**
 * Starts the heartbeat on a connected client; onDead is called once when no heartbeat
 * came back for DEAD_MS. The clock is real time: the server's delays are real. probe: an
 * SQL expression of type text that every heartbeat reads (probed).
 */
export async function startHeartbeat(
  client: pg.Client,
  onDead: () => void,
  now: () => number = Date.now,
  probe?: string,
): Promise<Heartbeat> {
  // Lowercase letters and digits: a plain identifier, no quoting.
  const channel = `inventory_heartbeat_${randomBytes(8).toString('hex')}`;
  let heard = now();
  // Nothing is proven before the first heartbeat comes back.
  let sentHeard = -Infinity;
  let inFlight = false;
  let stopped = false;
  let probed: Probe | undefined;
  const sql = probe === undefined ? 'SELECT pg_notify($1, $2)' : `SELECT pg_notify($1, $2), (${probe}) AS probe`;
  client.on('notification', (message) => {
    if (message.channel !== channel) return;
    heard = now();
    const sent = Number(message.payload);
    if (sent > sentHeard) sentHeard = sent;
  });
  await client.query(`LISTEN ${channel}`);

  const timer = setInterval(() => {
    if (stopped) return;
    if (now() - heard > DEAD_MS) {
      stopped = true;
      clearInterval(timer);
      onDead();
      return;
    }
    // One at a time: on a silent connection queries would pile up in the client.
    if (inFlight) return;
    inFlight = true;
    const sentAt = now();
    client.query<{ probe?: string }>(sql, [channel, String(sentAt)]).then(
      ({ rows }) => {
        inFlight = false;
        const value = rows[0]?.probe;
        if (typeof value === 'string' && (probed === undefined || sentAt > probed.sentAt)) probed = { sentAt, value };
      },
      // The connection failed: its 'error' or 'end' tells the watcher, which stops us.
      () => (inFlight = false),
    );
  }, HEARTBEAT_MS);
  timer.unref();

  return {
    lastHeardAt: () => heard,
    sentHeardAt: () => sentHeard,
    overdue: () => now() - heard > OVERDUE_MS,
    probed: () => probed,
    stop() {
      stopped = true;
      clearInterval(timer);
    },
  };
}
