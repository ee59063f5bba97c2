// What the bare PATCH servers of npm run bench share, and nothing more: the request read
// (the pet from the path's last segment, the quantity from the JSON body), the answer,
// and the event row each appends (hash-chained, as the service's are). GET /healthz
// answers at once: probed beside a server's own PATCH load, it shows how long a request
// that costs nothing waits on this machine under that load (the floor of the service's
// /healthz latency).
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';

const HEALTHY = '{"status":"ok"}';

/**
 * Listens on 127.0.0.1:port; onPatch gets each request's pet (the path's last segment),
 * quantity and response; a GET of a path in gets (query left out) goes to its handler.
 */
export function servePatches(
  port: string,
  onPatch: (petId: string, quantity: number, res: ServerResponse) => void,
  gets: Record<string, (req: IncomingMessage, res: ServerResponse) => void> = {},
): void {
  createServer((req, res) => {
    if (req.method === 'GET') {
      const path = req.url!.split('?')[0]!;
      if (path === '/healthz') {
        res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': HEALTHY.length }).end(HEALTHY);
        return;
      }
      const handler = gets[path];
      if (handler) {
        handler(req, res);
        return;
      }
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let quantity: number;
      try {
        quantity = (JSON.parse(Buffer.concat(chunks).toString()) as { quantity: number }).quantity;
      } catch {
        res.writeHead(400).end();
        return;
      }
      onPatch(req.url!.split('/').pop()!, quantity, res);
    });
  }).listen(Number(port), '127.0.0.1', () => process.stdout.write('listening\n'));
}

/** The 200 answer to a PATCH: the pet as it now is, its version as the ETag. */
export function answer(res: ServerResponse, petId: number | bigint, quantity: number, version: number): void {
  const body = `{"petId":${petId},"quantity":${quantity},"status":"available"}`;
  res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body), ETag: `"${version}"` });
  res.end(body);
}

/** The event a PATCH appends: quantity set, by the bench, chained to prevHash. */
export function eventRow<Seq extends number | bigint>(seq: Seq, petId: Seq, version: number, quantity: number, prevHash: string) {
  return {
    seq,
    petId,
    version,
    type: 'QuantitySet',
    data: `{"quantity":${quantity},"schemaVersion":1}`,
    actor: 'bench',
    requestId: 'bench',
    recordedAt: new Date().toISOString(),
    prevHash,
  };
}
