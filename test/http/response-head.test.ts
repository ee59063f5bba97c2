// The headers every answer gets from the stages in front of the routes (the request id,
// then the CORS grant) come first, once each, in that order, on every kind of answer: the
// list, the router's other replies, its 204 and 405, errors, the preflight, the feed's
// page and its stream. Read as raw bytes, so that the order shows.
import { connect } from 'node:net';
import * as assert from 'uvu/assert';
import { appSuite } from '../kit/suites.ts';

const SHOP = 'https://shop.example.com';
const EXPOSED = 'ETag,X-Request-Id,Idempotent-Replayed,Link,Log-Receipt';

/** The head (status line and header lines) of the answer to one raw request. */
function headOf(port: number, request: string): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(request));
    let text = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no head within 5 s: ${JSON.stringify(text)}`));
    }, 5000);
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      if (end < 0) return;
      clearTimeout(timer);
      socket.destroy();
      resolve(text.slice(0, end).split('\r\n'));
    });
    socket.on('error', reject);
  });
}

const names = (head: string[]) => head.slice(1).map((line) => line.slice(0, line.indexOf(':')).toLowerCase());

const answers = appSuite('the head of every answer', { given: (t) => t.track(7, 3), app: { corsOrigins: [SHOP] } });

answers('starts with the request id, then Vary and the CORS grant, each once, whatever answers', async ({ t }) => {
  const listTag = (await t.get('/v1/inventory')).headers.etag as string;
  const key = `Authorization: Bearer ${t.key}\r\n`;
  const cases: [string, string, number][] = [
    ['the list', `GET /v1/inventory HTTP/1.1\r\n${key}`, 200],
    ['the list, not modified', `GET /v1/inventory HTTP/1.1\r\n${key}If-None-Match: ${listTag}\r\n`, 304],
    ['the list, HEAD', `HEAD /v1/inventory HTTP/1.1\r\n${key}`, 200],
    ['an entry', `GET /v1/inventory/7 HTTP/1.1\r\n${key}`, 200],
    ['no such entry', `GET /v1/inventory/8 HTTP/1.1\r\n${key}`, 404],
    ['no key', 'GET /v1/inventory HTTP/1.1\r\n', 401],
    ['a method not served', `DELETE /v1/inventory HTTP/1.1\r\n${key}`, 405],
    ['OPTIONS', `OPTIONS /v1/inventory HTTP/1.1\r\n${key}`, 204],
    ['a PATCH', `PATCH /v1/inventory/7 HTTP/1.1\r\n${key}Content-Type: application/json\r\nContent-Length: 14\r\n\r\n{"quantity":4}`, 200],
    ['the feed', `GET /v1/events HTTP/1.1\r\n${key}`, 200],
    ['the feed as a stream', `GET /v1/events HTTP/1.1\r\n${key}Accept: text/event-stream\r\n`, 200],
  ];
  for (const [what, start, status] of cases) {
    const id = `head-${status}-${what.length}`;
    const request = start.includes('\r\n\r\n')
      ? start.replace('\r\n\r\n', `\r\nHost: x\r\nOrigin: ${SHOP}\r\nX-Request-Id: ${id}\r\n\r\n`)
      : `${start}Host: x\r\nOrigin: ${SHOP}\r\nX-Request-Id: ${id}\r\n\r\n`;
    const head = await headOf(t.port, request);
    assert.match(head[0]!, new RegExp(`^HTTP/1\\.1 ${status} `), what);
    const vary = what.startsWith('the feed') ? 'Vary: Origin, Accept' : 'Vary: Origin';
    // An OPTIONS that is no preflight (no Access-Control-Request-Method) is granted nothing.
    const grant = what === 'OPTIONS' ? [] : [`Access-Control-Allow-Origin: ${SHOP}`, `Access-Control-Expose-Headers: ${EXPOSED}`];
    assert.equal(head.slice(1, 3 + grant.length), [`X-Request-Id: ${id}`, vary, ...grant], what);
    assert.is(new Set(names(head)).size, names(head).length, `${what}: no header twice (${head.join(' | ')})`);
  }
  // The list written in one go carries the same headers, in the same order, as before.
  const list = await headOf(t.port, `GET /v1/inventory HTTP/1.1\r\nHost: x\r\n${key}Origin: ${SHOP}\r\n\r\n`);
  assert.equal(names(list).slice(4, 8), ['etag', 'cache-control', 'content-type', 'content-length'], list.join(' | '));
});

answers('a preflight starts with the request id and Vary, then what @koa/cors grants', async ({ t }) => {
  const head = await headOf(
    t.port,
    `OPTIONS /v1/inventory/7 HTTP/1.1\r\nHost: x\r\nOrigin: ${SHOP}\r\nAccess-Control-Request-Method: PATCH\r\nX-Request-Id: pre-1\r\n\r\n`,
  );
  assert.match(head[0]!, /^HTTP\/1\.1 204 /);
  assert.equal(head.slice(1, 4), ['X-Request-Id: pre-1', 'Vary: Origin', `Access-Control-Allow-Origin: ${SHOP}`]);
  assert.is(new Set(names(head)).size, names(head).length, head.join(' | '));
});

answers.run();
