// How the server ends its keep-alive connections at shutdown: from drain() on, every
// answer carries `Connection: close` and its connection is closed once it is sent; idle
// connections are closed at once. The drain then takes as long as the requests in
// flight, not a keep-alive client's whole stream.
import type { ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';

interface ConnectionDrain {
  /** Whether the response's request is run; false for one pipelined behind the last
   * answer of a draining connection. */
  admit(socket: Duplex, res: ServerResponse): boolean;
  /** The connection's responses not yet closed, in order (the stall guard measures them). */
  responsesOf(socket: Duplex): readonly ServerResponse[];
  drain(): void;
}

const NONE: readonly ServerResponse[] = [];

/** closeIdle: closes the server's idle connections. */
export function makeConnectionDrain(closeIdle: () => void): ConnectionDrain {
  // Each open connection's responses not yet closed, in order (more than one: pipelined
  // requests); a connection's list lasts as long as the connection.
  const pending = new Map<Duplex, ServerResponse[]>();
  let draining = false;
  /** The connection ends after res; one whose headers are sent is closed once it ends. */
  const lastOnConnection = (res: ServerResponse) => {
    if (!res.headersSent) res.shouldKeepAlive = false;
    else res.once('finish', () => setImmediate(closeIdle));
  };
  return {
    admit(socket, res) {
      let queue = pending.get(socket);
      if (queue === undefined) {
        queue = [];
        pending.set(socket, queue);
        socket.once('close', () => pending.delete(socket));
      }
      // While draining, the answer before this one closes the connection: a request
      // pipelined behind it is never run (nothing of it committed), so none is left
      // without its answer.
      if (draining && queue.length > 0) return false;
      queue.push(res);
      const responses = queue;
      // A response closes once.
      res.on('close', () => responses.splice(responses.indexOf(res), 1));
      if (draining) lastOnConnection(res);
      return true;
    },
    responsesOf: (socket) => pending.get(socket) ?? NONE,
    drain() {
      draining = true;
      for (const queue of pending.values()) if (queue.length > 0) lastOnConnection(queue.at(-1)!);
      closeIdle();
    },
  };
}
