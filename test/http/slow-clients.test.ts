// Slow and greedy clients: a slow-loris holding many connections does not stall the
// service for others, and its connections are cut when the header timeout passes; a
// body over 4 KiB is refused while it streams, before it ends.
import { connect, type Socket } from 'node:net';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { DEFAULT_LIMITS } from '../../src/http/server/node-server.ts';
import { startApp, type TestApp } from '../kit/app.ts';
import { WAIT_MS, withTimeout } from '../kit/service.ts';

const LIMITS = { ...DEFAULT_LIMITS, headersTimeoutMs: 1000, requestTimeoutMs: 2000, checkIntervalMs: 100 };

const slow = suite<{ t: TestApp }>('slow and greedy clients');
slow.before.each(async (ctx) => {
  ctx.t = await startApp({ limits: LIMITS });
  await ctx.t.track(7, 3);
});
slow.after.each(async (ctx) => {
  await ctx.t.close();
});

function opened(port: number): Promise<{ socket: Socket; received: () => string; closed: Promise<void> }> {
  return new Promise((resolve, reject) => {
    let received = '';
    const socket = connect(port, '127.0.0.1', () => resolve({ socket, received: () => received, closed }));
    socket.on('data', (c: Buffer) => (received += c.toString('utf8')));
    socket.on('error', () => undefined);
    const closed = new Promise<void>((done) => socket.on('close', () => done()));
    socket.once('error', reject);
  });
}

slow('a slow-loris of 100 connections: others are still served at once, and the slow ones get 408', async ({ t }) => {
  const loris = await Promise.all(Array.from({ length: 100 }, () => opened(t.port)));
  const header = `GET /v1/inventory HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.key}\r\nX-Pad: `;
  let sent = 0;
  const drip = setInterval(() => {
    for (const l of loris) if (!l.socket.destroyed) l.socket.write(header[sent % header.length]!);
    sent++;
  }, 50);
  try {
    // Answered at all while the loris holds its connections open: a service it blocked
    // would leave these waiting, far past any request's time here.
    for (let i = 0; i < 20; i++) {
      const res = await withTimeout(t.get(), WAIT_MS, 'a GET beside the loris');
      assert.is(res.status, 200);
    }
    await Promise.all(loris.map((l) => Promise.race([l.closed, new Promise((r) => setTimeout(r, 5000))])));
  } finally {
    clearInterval(drip);
  }
  const answers = loris.map((l) => l.received());
  assert.ok(
    answers.every((a) => a.startsWith('HTTP/1.1 408 ')),
    `every slow connection got 408: ${answers.find((a) => !a.startsWith('HTTP/1.1 408 '))}`,
  );
  assert.match(answers[0]!, /"code":"request_timeout"/);
  assert.ok(
    loris.every((l) => l.socket.destroyed || l.socket.readableEnded),
    'and was closed',
  );
});

slow('a body over 4 KiB is refused with 413 while it streams, before it ends', async ({ t }) => {
  const l = await opened(t.port);
  l.socket.write(
    `PATCH /v1/inventory/7 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.key}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`,
  );
  // 6 KiB in chunks, and then the body never ends.
  for (let i = 0; i < 6; i++) l.socket.write(`400\r\n${'x'.repeat(1024)}\r\n`);
  const deadline = Date.now() + 1500;
  while (!l.received().includes('\r\n\r\n') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  assert.match(l.received(), /^HTTP\/1\.1 413 /);
  assert.match(l.received(), /"code":"payload_too_large"/);
  l.socket.destroy();
  assert.is((await t.events()).length, 1);
});

slow('keep-alive: an idle connection is closed after the keep-alive timeout', async () => {
  const t = await startApp({ limits: { ...LIMITS, keepAliveTimeoutMs: 300 } });
  try {
    const l = await opened(t.port);
    l.socket.write(`GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n`);
    // Waits many times the keep-alive timeout: a connection still open then is one the
    // service never closes.
    await Promise.race([l.closed, new Promise((r) => setTimeout(r, 3000))]);
    assert.match(l.received(), /^HTTP\/1\.1 200 /);
    assert.ok(l.socket.destroyed || l.socket.readableEnded, 'closed');
  } finally {
    await t.close();
  }
});

slow.run();
