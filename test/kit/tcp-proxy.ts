// A TCP proxy on 127.0.0.1 in front of the test's PostgreSQL server, to make it stop
// answering without closing a connection: what a network partition, a stalled disk or a
// paused VM looks like to the service. freeze() stops forwarding in both directions
// (the bytes wait in the proxy, the sockets stay open); thaw() forwards them and goes on.
// freezeAfterCommit() lets a COMMIT through to the server and holds everything after it,
// its answer included: the service cannot tell whether its batch committed.
import { createServer, connect, type AddressInfo, type Server, type Socket } from 'node:net';

export interface FreezingProxy {
  /** The server's URL with the proxy's port in it. */
  url: string;
  freeze(): void;
  /** Freezes once a client sends the COMMIT of a transaction that added events, after
   * passing that COMMIT on. Resolves when it froze. */
  freezeAfterCommit(): Promise<void>;
  thaw(): void;
  /** Ends every connection (both sides), as a server that gave up on them would. */
  cut(): void;
  close(): Promise<void>;
}

interface Pair {
  client: Socket;
  server: Socket;
  /** The client wrote events in its current transaction. */
  wrote: boolean;
  /** Bytes held while frozen, per direction. */
  up: Buffer[];
  down: Buffer[];
}

// The simple-query message of a COMMIT: 'Q', a length, the text, a NUL.
const COMMIT = Buffer.from('COMMIT\0');
// The service's batch statement, which adds events: only its transaction's COMMIT counts.
const EVENTS_WRITE = Buffer.from('INSERT INTO events');

export async function freezingProxy(serverUrl: string): Promise<FreezingProxy> {
  const upstream = new URL(serverUrl);
  const pairs = new Set<Pair>();
  let frozen = false;
  let armed: (() => void) | undefined;

  const server: Server = createServer((client) => {
    const socket = connect(Number(upstream.port), upstream.hostname);
    const pair: Pair = { client, server: socket, wrote: false, up: [], down: [] };
    pairs.add(pair);
    const end = () => {
      pairs.delete(pair);
      client.destroy();
      socket.destroy();
    };
    client.on('error', end).on('close', end);
    socket.on('error', end).on('close', end);
    client.on('data', (chunk: Buffer) => {
      if (frozen) return void pair.up.push(chunk);
      socket.write(chunk);
      if (chunk.includes(EVENTS_WRITE)) pair.wrote = true;
      const commit = chunk.includes(COMMIT);
      if (armed && commit && pair.wrote) {
        frozen = true;
        const done = armed;
        armed = undefined;
        done();
      }
      if (commit) pair.wrote = false;
    });
    socket.on('data', (chunk: Buffer) => {
      if (frozen) pair.down.push(chunk);
      else client.write(chunk);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = new URL(serverUrl);
  url.port = String((server.address() as AddressInfo).port);

  return {
    url: url.toString(),
    freeze: () => void (frozen = true),
    freezeAfterCommit: () => new Promise<void>((resolve) => (armed = resolve)),
    thaw() {
      frozen = false;
      for (const pair of pairs) {
        for (const chunk of pair.up.splice(0)) pair.server.write(chunk);
        for (const chunk of pair.down.splice(0)) pair.client.write(chunk);
      }
    },
    cut() {
      for (const pair of pairs) {
        pair.client.destroy();
        pair.server.destroy();
      }
    },
    async close() {
      for (const pair of pairs) {
        pair.client.destroy();
        pair.server.destroy();
      }
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
