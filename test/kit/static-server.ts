// A directory served as any static web server serves it (GET of a file under its root,
// 404 for anything else, the query ignored): what a copy made by scripts/mirror needs.
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { join, normalize } from 'node:path';

export interface StaticServer {
  url: string;
  close(): Promise<void>;
}

export function serveStatic(root: string): Promise<StaticServer> {
  const server: Server = createServer((req, res) => {
    const path = normalize(decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname));
    readFile(join(root, path)).then(
      (body) => res.writeHead(200, { 'Content-Length': body.length }).end(body),
      () => res.writeHead(404).end('not found'),
    );
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      resolve({ url: `http://127.0.0.1:${port}`, close: () => new Promise((done) => server.close(() => done())) });
    });
  });
}
