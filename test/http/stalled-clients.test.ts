// Clients that send requests and never read the answers: their connections are closed
// once they have taken nothing for the stall time, and what stalled connections pin
// together stays under the cap, the longest stalled dropped first. The answers that send
// one list hold it in memory once between them, and count once. A reader that is slow
// but reads gets every byte, however long it takes.
import { EventEmitter, once } from 'node:events';
import type { ServerResponse } from 'node:http';
import { connect, type Socket } from 'node:net';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { appliedEntries, commandsFor } from '../../src/application/write/commands.ts';
import { DEFAULT_LIMITS } from '../../src/http/server/node-server.ts';
import type { GuardTiming } from '../../src/http/server/stall-guard.ts';
import { startApp, type TestApp } from '../kit/app.ts';
import { waitUntil } from '../kit/wait.ts';

const MiB = 1024 * 1024;
const LIMITS = { ...DEFAULT_LIMITS, checkIntervalMs: 100, stallTimeoutMs: 1500, maxPinnedBytes: 8 * MiB };
// About 50 bytes each: GET /v1/inventory answers about 1 MB.
const PETS = 20_000;

interface Ctx {
  t: TestApp;
  /** What the server's connections pin now. */
  pinned: () => number;
  /** How many answers the server has not finished sending. */
  unfinished: () => number;
  /** Whether the server has closed its side of this client's connection. */
  closedByServer: (client: Socket) => boolean;
  /** Resolves once the server has closed its side of one of these clients' connections. */
  oneClosed: (clients: Socket[]) => Promise<void>;
}

/** The stall guard's time in the test's hands: a clock that moves only when the test
 * says, and checks that run only when the test runs them (besides those the guard
 * starts itself when a large answer waits). */
function guardTime() {
  let clock = 0;
  let check: (() => void) | undefined;
  const timing: GuardTiming = {
    now: () => clock,
    every: (_intervalMs, run) => {
      check = run;
      return () => (check = undefined);
    },
  };
  return {
    timing,
    now: () => clock,
    /** Sets the clock to `at` and runs a check there. */
    checkAt(at: number) {
      clock = at;
      check!();
    },
  };
}

/** The guard's own interval, counted: `checks(n)` resolves once n more checks have run. */
function countedChecks() {
  const ran = new EventEmitter();
  let count = 0;
  const timing: GuardTiming = {
    every: (intervalMs, run) => {
      const timer = setInterval(() => {
        run();
        ran.emit('check', ++count);
      }, intervalMs);
      return () => clearInterval(timer);
    },
  };
  const checks = async (n: number) => {
    const until = count + n;
    while (count < until) await once(ran, 'check');
  };
  return { timing, checks };
}

async function given(ctx: Ctx, limits: typeof LIMITS, stallTiming?: GuardTiming): Promise<void> {
  // The clients share one key, whose requests waiting to be read are many: the stall
  // guard is what is tested, not the key's bound.
  ctx.t = await startApp({ limits, maxRequestsPerKey: 100_000, stallTiming });
  const pets = Array.from({ length: PETS }, (_, i) => ({
    type: 'TrackPet' as const,
    petId: BigInt(i + 1),
    quantity: 1,
    status: 'available' as const,
  }));
  await commandsFor(ctx.t.store).handleAll(pets, { actor: 'cli:test', requestId: 'seed' }).then(appliedEntries);
  // What the server's connections hold for their clients, measured here on its own:
  // each socket's write buffer, and the responses queued behind it, not yet on it.
  const sockets = new Set<Socket>();
  const queued = new Set<ServerResponse>();
  const byPort = new Map<number, Socket>();
  const closings = new EventEmitter();
  ctx.t.server.on('connection', (s: Socket) => {
    sockets.add(s);
    byPort.set(s.remotePort!, s);
    s.once('close', () => {
      sockets.delete(s);
      closings.emit('close');
    });
  });
  // A client that does not read cannot see the server close: ask the server's side.
  ctx.closedByServer = (client) => byPort.get(client.localPort!)?.destroyed ?? false;
  ctx.oneClosed = async (clients) => {
    while (!clients.some(ctx.closedByServer)) await once(closings, 'close');
  };
  ctx.t.server.on('request', (_req, res: ServerResponse) => {
    queued.add(res);
    res.once('finish', () => queued.delete(res));
    res.once('close', () => queued.delete(res));
  });
  ctx.unfinished = () => [...queued].filter((res) => !res.req.socket?.destroyed).length;
  ctx.pinned = () => {
    let total = 0;
    for (const s of sockets) if (!s.destroyed) total += s.writableLength;
    for (const res of queued) if (!res.socket && !res.req.socket?.destroyed) total += res.writableLength;
    return total;
  };
}

const stalled = suite<Ctx>('stalled clients');
stalled.after.each(async (ctx) => {
  await ctx.t.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function opened(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => resolve(socket));
    socket.once('error', reject);
  });
}

const closed = (s: Socket) => s.destroyed || s.readableEnded || s.closed;

/** A client that sends `count` pipelined GETs of the whole inventory and never reads. */
async function neverReading(t: TestApp, count: number): Promise<Socket> {
  const s = await opened(t.port);
  s.on('error', () => undefined);
  s.pause();
  s.write(pipelinedGets(t, count));
  return s;
}

function pipelinedGets(t: TestApp, count: number): string {
  return `GET /v1/inventory HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.key}\r\n\r\n`.repeat(count);
}

stalled(
  'clients that never read one list are closed for stalling, not a millisecond before the stall time, and the list counts once',
  async (ctx) => {
    const time = guardTime();
    await given(ctx, LIMITS, time.timing);
    const { t, unfinished, closedByServer } = ctx;
    const bodyBytes = (await t.get()).text.length;
    const started = Date.now();
    const ANSWERS = 16;
    // 16 answers of about 1 MB each a client: more than the kernel's buffers take.
    const never: Socket[] = [];
    for (let i = 0; i < 12; i++) never.push(await neverReading(t, ANSWERS));
    // The most answers waiting at once, each a whole list until its last byte is out. The
    // guard's clock stands still meanwhile: none may be closed for stalling, nor (the list
    // counted once) for the cap, by the checks its large answers start.
    let most = 0;
    await waitUntil(
      () => (most = Math.max(most, unfinished())) * bodyBytes > 4 * LIMITS.maxPinnedBytes,
      `answers waiting at once: counted each on its own, far more than the cap (or this proves nothing); ${most} so far`,
    );
    assert.equal(never.filter(closedByServer), [], 'none closed while the clock stood still');
    // One turn of checks with no turn of the event loop between them: no byte can be taken
    // in between, so each connection is measured as stalled since the clock's start.
    time.checkAt(0);
    time.checkAt(LIMITS.stallTimeoutMs - 1);
    assert.equal(never.filter(closedByServer), [], 'none closed a millisecond short of the stall time');
    time.checkAt(LIMITS.stallTimeoutMs);
    assert.ok(never.some(closedByServer), 'closed at the stall time');
    // Those that still had output moving at the start are closed a stall time after it stopped.
    while (!never.every(closedByServer)) {
      await nextTurn();
      time.checkAt(time.now() + LIMITS.stallTimeoutMs);
    }
    const tookMs = Date.now() - started;
    console.log(`  every client that never read was closed ${tookMs} ms after the first came`);
    // Closed for taking nothing, none for the cap: the one list they all wait on is in
    // memory once, under the cap. The service still answers others, and said what it did
    // at most once a second (of the real clock its warnings keep), not once per connection.
    const warnings = t.logs
      .join('')
      .split('\n')
      .filter((l) => l.includes('took no response bytes'));
    assert.equal(
      warnings.filter((l) => l.includes('pinned too much')),
      [],
      'no connection closed for the cap',
    );
    assert.ok(warnings.length >= 1 && warnings.length <= Math.ceil(tookMs / 1000) + 1, `${warnings.length} warnings`);
    assert.is((await t.get('/healthz')).status, 200);
    for (const s of never) s.destroy();
  },
);

stalled(
  'clients that pipeline hundreds of requests for one list and never read are closed for the cap: each answer waiting counts',
  async (ctx) => {
    // The stall time is out of the way: these are closed for what their answers hold. The
    // list is one, sent by every answer, in memory once; each answer waiting holds its
    // request, response and context besides.
    await given(ctx, { ...LIMITS, stallTimeoutMs: 600_000 });
    const { t, unfinished, closedByServer, oneClosed } = ctx;
    assert.is((await t.get()).status, 200);
    let most = 0;
    const watch = setInterval(() => (most = Math.max(most, unfinished())), 5);
    const clients: Socket[] = [];
    try {
      for (let i = 0; i < 4; i++) clients.push(await neverReading(t, 2000));
      // One never closed is caught by the test run's timeout for the file.
      await oneClosed(clients);
    } finally {
      clearInterval(watch);
    }
    console.log(`  ${most} answers waited at once; ${clients.filter(closedByServer).length} of ${clients.length} clients closed`);
    const overCap = t.logs
      .join('')
      .split('\n')
      .filter((l) => l.includes('stalled ones pinned too much'));
    assert.ok(overCap.length >= 1, 'closed for the cap');
    for (const s of clients) s.destroy();
  },
);

stalled('past the cap, the connection stalled longest is closed first, and only as many as needed', async (ctx) => {
  // Each client waits on a list of its own (a PATCH before its GETs changes the list),
  // about 1.1 MiB with the room it was rendered with and its 16 answers' objects; the
  // cap holds two of them; the stall time is out of the way.
  const cap = 2.75 * MiB;
  const { timing, checks } = countedChecks();
  await given(ctx, { ...LIMITS, stallTimeoutMs: 60_000, maxPinnedBytes: cap }, timing);
  const { t, closedByServer, oneClosed } = ctx;
  const bodyBytes = (await t.get()).text.length;
  assert.ok(2 * bodyBytes < cap && 3 * bodyBytes > cap, `a list of ${bodyBytes} bytes: the cap holds two, not three`);
  const clients: Socket[] = [];
  for (let i = 0; i < 3; i++) {
    assert.is((await t.patch(1, { quantity: i + 2 })).status, 200);
    clients.push(await neverReading(t, 16));
    // A few checks apart: each stalled since a check of its own.
    await checks(5);
  }
  // The guard closes one whenever its check comes; a few more checks then may close no other.
  await oneClosed(clients);
  await checks(5);
  assert.equal(clients.map(closedByServer), [true, false, false]);
  for (const s of clients) s.destroy();
});

stalled(
  'each new answer is held to the cap at once, not at the next check: a list rendered anew for each client that never reads',
  async (ctx) => {
    // No periodic check within the test: only the one a large answer starts.
    await given(ctx, { ...LIMITS, checkIntervalMs: 60_000, stallTimeoutMs: 60_000, maxPinnedBytes: 8 * MiB });
    const { t, pinned, closedByServer, oneClosed } = ctx;
    const bodyBytes = (await t.get()).text.length;
    // Sixteen answers a client: more than the kernel's buffers take, so that most stays
    // here (a large body goes out a slice per turn, and a socket's buffers grow with it).
    const ANSWERS = 16;
    const clients: Socket[] = [];
    let peak = 0;
    const watch = setInterval(() => (peak = Math.max(peak, pinned())), 5);
    try {
      for (let i = 0; i < 24; i++) {
        // A PATCH changes the list, so the GET behind it renders a list of its own.
        const s = await opened(t.port);
        s.on('error', () => undefined);
        s.pause();
        const body = JSON.stringify({ quantity: i });
        s.write(
          `PATCH /v1/inventory/1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.key}\r\nContent-Type: application/json\r\n` +
            `Content-Length: ${body.length}\r\n\r\n${body}` +
            pipelinedGets(t, ANSWERS),
        );
        clients.push(s);
        await sleep(40);
      }
      // The answers are rendered one after another (a list each): the cap is reached once
      // enough of them wait here, whenever that is on this machine. No periodic check runs
      // in the meantime (every 60 s), so a connection closed is closed by that answer's own.
      // One never closed is caught by the test run's timeout for the file.
      await oneClosed(clients);
    } finally {
      clearInterval(watch);
    }
    const closedCount = clients.filter(closedByServer).length;
    console.log(
      `a new list for each client: peak ${(peak / MiB).toFixed(1)} MiB pinned, ${closedCount} of ${clients.length} closed for the cap`,
    );
    assert.ok(closedCount > 0, 'the cap closed connections');
    assert.ok(
      peak <= 8 * MiB + 2 * ANSWERS * bodyBytes,
      `pinned ${(peak / MiB).toFixed(1)} MiB at the peak; the cap is 8 MiB and a client's answers ${((ANSWERS * bodyBytes) / MiB).toFixed(1)} MiB`,
    );
    for (const s of clients) s.destroy();
  },
);

stalled('a slow reader that keeps reading gets every byte, for far longer than the stall time', async (ctx) => {
  // The cap is out of the way: this is about the stall clock.
  const time = guardTime();
  await given(ctx, { ...LIMITS, stallTimeoutMs: 1000, maxPinnedBytes: 1024 * MiB }, time.timing);
  const { t, closedByServer } = ctx;
  const bodyBytes = (await t.get()).text.length;
  const s = await opened(t.port);
  s.on('error', () => undefined);
  s.pause();
  const answers = 16;
  s.write(pipelinedGets(t, answers));
  // About 13 MB, 150 KiB every 50 ms of the guard's clock, with a check each time:
  // several stall times long, but never a pause long enough to count as stalled. The
  // real pause lets the bytes move; however long a busy machine makes it, the guard's
  // clock moves 50 ms.
  let received = 0;
  let heads = 0;
  let tail = '';
  while (!closedByServer(s) && !closed(s) && (heads < answers || received < answers * bodyBytes)) {
    await sleep(50);
    time.checkAt(time.now() + 50);
    const chunk = (s.read(150 * 1024) ?? s.read()) as Buffer | null;
    if (!chunk) continue;
    received += chunk.length;
    const text = tail + chunk.toString('latin1');
    heads += text.split('HTTP/1.1 200 OK').length - 1;
    tail = text.slice(-20);
  }
  const readMs = time.now();
  assert.ok(!closedByServer(s) && !closed(s), `the slow reader was not cut off (after ${readMs} ms, ${heads} answers, ${received} bytes)`);
  assert.is(heads, answers, 'every answer arrived');
  assert.ok(received >= answers * bodyBytes, `received ${(received / MiB).toFixed(1)} MiB`);
  assert.ok(readMs > 2000, `it read for ${readMs} ms of the guard's clock`);
  s.destroy();
});

stalled.run();
