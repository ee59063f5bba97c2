// Every kind of connection a client can leave stalled is closed by the server within
// its bound, 300 of them at once: one that never sends a byte, a request whose headers
// or body never finish, one waiting for 100-continue's body, one answered 400 for bad
// HTTP or CONNECT, a keep-alive connection idle after a small answer that sits in the
// kernel's buffers, and ones whose answers (pipelined, or a list rendered anew after a
// PATCH) wait on the socket because the client never reads. None of these clients reads
// or closes, so only the server's side can end them; a client that does not read
// cannot see that, so the server's sockets are asked. A kind the server does not bound
// stays open for ever: the test fails on a connection still open well past the bound
// its limits give (a loaded machine closes some later than the bound itself, by the
// time its event loop was held; the log shows how late, by kind).
import { connect, type Socket } from 'node:net';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { appliedEntries, commandsFor } from '../../src/application/write/commands.ts';
import { DEFAULT_LIMITS } from '../../src/http/server/node-server.ts';
import { startApp, type TestApp } from '../kit/app.ts';

const LIMITS = {
  ...DEFAULT_LIMITS,
  checkIntervalMs: 100,
  headersTimeoutMs: 1000,
  requestTimeoutMs: 2000,
  keepAliveTimeoutMs: 500,
  stallTimeoutMs: 2000,
  // Out of the way: the connections that pin answers are to be closed by the stall time.
  maxPinnedBytes: 1024 * 1024 * 1024,
};
// Node closes an idle keep-alive connection a second after keepAliveTimeout.
const KEEP_ALIVE_SLACK_MS = 1000;
const BOUND_MS =
  Math.max(LIMITS.headersTimeoutMs, LIMITS.requestTimeoutMs, LIMITS.keepAliveTimeoutMs + KEEP_ALIVE_SLACK_MS, LIMITS.stallTimeoutMs) +
  // Two checks, and some time for a busy event loop.
  1500;
/** A connection still open this long after the bound was never going to be closed. */
const NEVER_MS = 10_000;
const SOCKETS = 300;
// About 50 bytes each: GET /v1/inventory answers about 250 KB.
const PETS = 5_000;

/** What each kind of client sends before it stalls (never reading, never closing). */
function kinds(key: string): Record<string, (i: number) => string> {
  const auth = `Authorization: Bearer ${key}\r\n`;
  const get = `GET /v1/inventory HTTP/1.1\r\nHost: x\r\n${auth}\r\n`;
  const patch = (body: string, extra = '') =>
    `PATCH /v1/inventory/1 HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\n` +
    `Content-Length: ${body.length}\r\n${extra}\r\n${body}`;
  return {
    'sends nothing': () => '',
    'headers never finish': () => 'GET /v1/inventory HTTP/1.1\r\nHost: x\r\n',
    'body never finishes': () => patch('{"quantity": 1}').slice(0, -5),
    'waits with Expect: 100-continue': () => patch('{"quantity": 1}', 'Expect: 100-continue\r\n').slice(0, -'{"quantity": 1}'.length),
    'bad HTTP, answered 400': () => 'BLAH\r\n\r\n',
    'CONNECT, answered 400': () => 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com\r\n\r\n',
    'idle keep-alive after a small answer': () => 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n',
    'pipelined answers waiting': () => get.repeat(24),
    'a new list after a PATCH, waiting': (i) => patch(JSON.stringify({ quantity: i })) + get.repeat(4),
  };
}

function opened(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => resolve(socket));
    socket.once('error', reject);
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const test = suite<{ t: TestApp }>('stalled connections of every kind');
test.after.each(async (ctx) => {
  await ctx.t?.close();
});

test(`${SOCKETS} stalled connections of mixed kinds are each closed by the server`, async (ctx) => {
  const t = (ctx.t = await startApp({ limits: LIMITS }));
  const pets = Array.from({ length: PETS }, (_, i) => ({
    type: 'TrackPet' as const,
    petId: BigInt(i + 1),
    quantity: 1,
    status: 'available' as const,
  }));
  await commandsFor(t.store).handleAll(pets, { actor: 'cli:test', requestId: 'seed' }).then(appliedEntries);
  const closedAt = new Map<number, number>();
  t.server.on('connection', (s: Socket) => {
    const port = s.remotePort!;
    s.once('close', () => closedAt.set(port, Date.now()));
  });
  const payloads = Object.entries(kinds(t.key));
  const clients: { kind: string; socket: Socket; sentAt: number }[] = [];
  const started = Date.now();
  try {
    for (let i = 0; i < SOCKETS; i++) {
      const [kind, payload] = payloads[i % payloads.length]!;
      const socket = await opened(t.port);
      socket.on('error', () => undefined);
      // Paused, the client takes nothing off its receive buffer.
      socket.pause();
      const text = payload(i);
      if (text) await new Promise((r) => socket.write(text, r));
      clients.push({ kind, socket, sentAt: Date.now() });
    }
    console.log(`${SOCKETS} stalled clients in ${Date.now() - started} ms`);
    const deadline = Date.now() + BOUND_MS + NEVER_MS;
    while (Date.now() < deadline && clients.some((c) => !closedAt.has(c.socket.localPort!))) await sleep(50);
    const open: Record<string, number> = {};
    const slowest: Record<string, number> = {};
    let late = 0;
    for (const c of clients) {
      const at = closedAt.get(c.socket.localPort!);
      if (at === undefined) open[c.kind] = (open[c.kind] ?? 0) + 1;
      else {
        slowest[c.kind] = Math.max(slowest[c.kind] ?? 0, at - c.sentAt);
        if (at - c.sentAt > BOUND_MS) late++;
      }
    }
    console.log(`  slowest close by kind, ms after the client stalled (bound ${BOUND_MS}, ${late} later): ${JSON.stringify(slowest)}`);
    assert.equal(open, {}, `connections the server had not closed ${NEVER_MS} ms past the bound, by kind`);
    // Every kind was there.
    assert.is(new Set(clients.map((c) => c.kind)).size, payloads.length);
    // And the service still answers.
    assert.is((await t.get('/healthz')).status, 200);
  } finally {
    for (const c of clients) c.socket.destroy();
  }
});

test.run();
