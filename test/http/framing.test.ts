// Framing that HTTP/1.1 does not allow (RFC 9112 section 6), sent as raw bytes to every
// route, cold and with the list held ready: each gets 400 (501 for a transfer coding the
// service does not decode) in the Error shape, never a 2xx nor any of the data, and the
// server closes the connection. A PATCH so framed changes nothing. Sound framing with a
// body is still served, once the body is read whole.
import { connect } from 'node:net';
import * as assert from 'uvu/assert';
import { assertErrorShape, rawAnswer } from '../kit/http.ts';
import { appSuite } from '../kit/suites.ts';

/** What a server answered on one connection, and whether it closed the connection itself. */
interface Exchange {
  text: string;
  closedByServer: boolean;
}

/** Sends parts one after the other (each after the server took the one before) and reads
 * until the server closes the connection, or gives up after 5 s. */
function exchange(port: number, parts: string[]): Promise<Exchange> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let closedByServer = false;
    const socket = connect(port, '127.0.0.1', () => {
      const send = (i: number) => {
        if (i < parts.length && !socket.destroyed) socket.write(parts[i]!, () => setImmediate(() => send(i + 1)));
      };
      send(0);
    });
    const giveUp = setTimeout(() => socket.destroy(), 5000);
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('end', () => {
      closedByServer = true;
      socket.destroy();
    });
    socket.on('close', () => {
      clearTimeout(giveUp);
      resolve({ text: Buffer.concat(chunks).toString('utf8'), closedByServer });
    });
    socket.on('error', (error: NodeJS.ErrnoException) => (error.code === 'ECONNRESET' ? undefined : reject(error)));
  });
}

const GET_PATHS = [
  '/v1/inventory',
  '/v1/inventory/7',
  '/v1/events',
  '/v1/events?after=0&limit=5',
  '/v1/log/head',
  '/v1/log/checkpoint',
  '/v1/log/signing-keys',
  '/v1/log/proof/inclusion?seq=1&size=1',
  '/v1/log/proof/consistency?from=1&to=1',
  '/v1/audit/stock-adjustments?pet=7',
  '/v1/no-such-thing',
  '/healthz',
  '/readyz',
  '/openapi.json',
  '/docs',
  '/metrics',
  '/audit',
  '/no-such-thing',
];

/** The faulty framings: the parts sent, and the status they must get. */
function variants(head: string): [label: string, parts: string[], status: number][] {
  return [
    ['TE xchunked', [`${head}Transfer-Encoding: xchunked\r\n\r\n`], 400],
    ['TE gzip', [`${head}Transfer-Encoding: gzip\r\n\r\n`], 400],
    ['TE identity', [`${head}Transfer-Encoding: identity\r\n\r\n`], 400],
    ['TE chunked twice', [`${head}Transfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n`], 400],
    ['TE with Content-Length', [`${head}Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n`], 400],
    ['two Content-Lengths', [`${head}Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}`], 400],
    ['an invalid Content-Length', [`${head}Content-Length: 2x\r\n\r\n{}`], 400],
    ['bad chunking', [`${head}Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`], 400],
    ['bad chunking, late', [`${head}Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n`, 'zz\r\n0\r\n\r\n'], 400],
    ['TE on HTTP/1.0', [`${head.replace('HTTP/1.1', 'HTTP/1.0')}Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n`], 400],
    ['TE gzip, chunked', [`${head}Transfer-Encoding: gzip, chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n`], 501],
  ];
}

const suite = appSuite('framing', {
  given: (t) => t.track(7, 3),
  // No framing refused here wrote anything: the setup's PetTracked alone.
  then: async (t) => {
    assert.is((await t.events()).length, 1, 'nothing appended');
    assert.is((await t.get()).text, '[{"petId":7,"quantity":3,"status":"available"}]');
  },
});

async function assertRefused(port: number, parts: string[], status: number, label: string): Promise<void> {
  const { text, closedByServer } = await exchange(port, parts);
  assert.ok(text.startsWith(`HTTP/1.1 ${status} `), `${label}: ${status}, got ${JSON.stringify(text.slice(0, 80))}`);
  assert.is(text.split('HTTP/1.1 ').length, 2, `${label}: one answer only`);
  assert.not.match(text, /"petId"|"quantity"|openapi|<html|inventory_/i, `${label}: none of the data`);
  assertErrorShape(rawAnswer(text), status, status === 501 ? 'not_implemented' : 'bad_request', label);
  assert.ok(closedByServer, `${label}: the server closed the connection`);
}

for (const warm of [false, true]) {
  suite(`every route refuses faulty framing, ${warm ? 'with the list held ready' : 'cold'}`, async ({ t }) => {
    if (warm) for (let i = 0; i < 2; i++) assert.is((await t.get()).status, 200);
    for (const key of [true, false]) {
      const auth = key ? `Authorization: Bearer ${t.key}\r\n` : '';
      for (const path of GET_PATHS) {
        for (const [label, parts, status] of variants(`GET ${path} HTTP/1.1\r\nHost: x\r\n${auth}`))
          await assertRefused(t.port, parts, status, `GET ${path} ${key ? 'with' : 'without'} a key, ${label}`);
      }
      const patch = `PATCH /v1/inventory/7 HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\n`;
      for (const [label, parts, status] of variants(patch)) {
        const body = parts.map((p) => p.replace('2\r\n{}\r\n', '0e\r\n{"quantity":9}\r\n'));
        await assertRefused(t.port, body, status, `PATCH ${key ? 'with' : 'without'} a key, ${label}`);
      }
    }
  });
}

suite('sound framing with a body is served once the body is read whole', async ({ t }) => {
  const auth = `Authorization: Bearer ${t.key}\r\n`;
  const get = `GET /v1/inventory HTTP/1.1\r\nHost: x\r\n${auth}Connection: close\r\n`;
  for (const parts of [
    [`${get}Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n`, '0\r\n\r\n'],
    [`${get}Content-Length: 2\r\n\r\n`, '{}'],
    [`GET /v1/inventory HTTP/1.0\r\n${auth}\r\n`],
  ]) {
    const { text } = await exchange(t.port, parts);
    assert.ok(text.startsWith('HTTP/1.1 200 '), JSON.stringify(text.slice(0, 80)));
    assert.ok(text.endsWith('[{"petId":7,"quantity":3,"status":"available"}]'), 'the list');
  }
  // A GET's body over the limit (64 KiB) is not read to its end: 413, and the connection closed.
  const big = 65 * 1024;
  const { text, closedByServer } = await exchange(t.port, [`${get}Content-Length: ${big}\r\n\r\n`, 'x'.repeat(big)]);
  assertErrorShape(rawAnswer(text), 413, 'payload_too_large');
  assert.ok(closedByServer);
});

suite.run();
