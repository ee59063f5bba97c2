// Ports for the processes a test starts. A child listens on port 0 and reports the port
// it got (the service's "listening" log line, Prometheus's "Listening on"): a port picked
// here and released before the child binds it could be taken in between by another test
// running at the same time.
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';

async function listenOnAnyPort(server: ReturnType<typeof createServer>): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

/** A port on 127.0.0.1 that nothing listens on, for a test that wants its connection
 * refused. Only such a test uses it: if another process took the port meanwhile, the
 * test sees an answer and fails loudly, it never passes by luck. */
export async function closedPort(): Promise<number> {
  const server = createServer();
  const port = await listenOnAnyPort(server);
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export interface ForwardingPort {
  port: number;
  close(): Promise<void>;
}

/** A TCP proxy on 127.0.0.1 (port 0) that forwards each new connection to the port
 * target() names at that moment: a client keeps one address while the service behind
 * it restarts on a port of its own. A connection the target refuses is closed, as the
 * service's own refusal would be. */
export async function forwardingPort(target: () => number): Promise<ForwardingPort> {
  const open = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(target(), '127.0.0.1');
    for (const socket of [client, upstream]) {
      open.add(socket);
      socket.on('error', () => socket.destroy()).on('close', () => open.delete(socket));
    }
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    client.pipe(upstream).pipe(client);
  });
  const port = await listenOnAnyPort(server);
  return {
    port,
    close: async () => {
      for (const socket of open) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
