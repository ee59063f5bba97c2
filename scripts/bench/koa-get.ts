// A limit for npm run bench: the stack's floor for GET. Koa and @koa/router, as the
// service uses them, answering GET /v1/inventory with the same precomputed bytes after a
// bearer check (the key compared with a fixed one). No database, no log line, no metrics:
// what the framework costs the service at the least.
//   koa-get.ts PORT BODY_FILE KEY
import { readFileSync } from 'node:fs';
import Router from '@koa/router';
import Koa from 'koa';

const [port, file, key] = process.argv.slice(2);
const body = readFileSync(file!);
const expected = `Bearer ${key}`;
const router = new Router();
router.get('/v1/inventory', (ctx) => {
  if (ctx.get('authorization') !== expected) {
    ctx.status = 401;
    ctx.body = { code: 'unauthorized', message: 'a valid API key is required', status: 401 };
    return;
  }
  ctx.type = 'application/json; charset=utf-8';
  ctx.body = body;
});
const app = new Koa();
app.use(router.routes());
app.listen(Number(port), '127.0.0.1', () => process.stdout.write('listening\n'));
