// A limit for npm run bench: a bare node:http server that answers every request with
// the same precomputed bytes (the service's GET /v1/inventory body). No routing, no
// auth, no database: what serving that body costs at the least.
//   bare-get.ts PORT BODY_FILE
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';

const [port, file] = process.argv.slice(2);
const body = readFileSync(file!);
createServer((_req, res) => {
  res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': body.length });
  res.end(body);
}).listen(Number(port), '127.0.0.1', () => process.stdout.write('listening\n'));
