// Catching up never starves others, on every store: STREAMS streams start from 0 on a log
// of EVENTS events while a client keeps sending PATCHes and asking /healthz; those are
// answered while the streams catch up, not after, and each stream still gets every event
// exactly once, in order. How long the answers took is printed, not asserted: no document
// promises a latency under this load, and a bound here would only measure the machine.
// The streams are read in a worker thread so that the readers' own parsing does not count
// against the service.
import { Agent, request } from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import * as assert from 'uvu/assert';
import { trackPets } from '../kit/fixtures.ts';
import { appSuite } from '../kit/suites.ts';

const STREAMS = 50;
const EVENTS = 20_000;

// Reads `streams` streams from 0; checks on each that the ids' seqs come one by one from
// 1; says 'caught-up' once every stream reached `seeded`, and the per-stream result once
// every stream reached the seq the test then sends.
const READERS = `
const http = require('node:http');
const { workerData, parentPort } = require('node:worker_threads');
const { port, key, streams: count, seeded } = workerData;
const streams = [];
let target;
let caughtUp = false;
const ID = Buffer.from('id: ');
const check = () => {
  if (!caughtUp && streams.every((s) => s.last >= seeded || s.bad)) {
    caughtUp = true;
    parentPort.postMessage({ kind: 'caught-up' });
  }
  if (target !== undefined && streams.every((s) => s.last >= target || s.bad)) {
    target = undefined;
    for (const s of streams) s.req.destroy();
    parentPort.postMessage({ kind: 'result', streams: streams.map(({ last, count, bad }) => ({ last, count, bad })) });
  }
};
for (let i = 0; i < count; i++) {
  const s = { last: 0, count: 0, bad: '', tail: Buffer.alloc(0) };
  streams.push(s);
  s.req = http.request({
    host: '127.0.0.1', port, path: '/v1/events', agent: false,
    headers: { Authorization: 'Bearer ' + key, Accept: 'text/event-stream' },
  });
  s.req.on('error', (error) => { s.bad ||= error.message; check(); });
  s.req.on('response', (res) => {
    if (res.statusCode !== 200) s.bad = 'status ' + res.statusCode;
    // Bytes, not text: the readers must cost the machine little beside the service.
    res.on('data', (chunk) => {
      const bytes = s.tail.length > 0 ? Buffer.concat([s.tail, chunk]) : chunk;
      const cut = bytes.lastIndexOf(10) + 1;
      s.tail = bytes.subarray(cut);
      for (let at = bytes.indexOf(ID); at >= 0 && at < cut; at = bytes.indexOf(ID, at + 4)) {
        if (at > 0 && bytes[at - 1] !== 10) continue;
        const seq = Number(bytes.toString('latin1', at + 4, bytes.indexOf(58, at + 4)));
        if (seq !== s.last + 1) s.bad ||= 'after ' + s.last + ' came ' + seq;
        s.last = seq;
        s.count++;
      }
      check();
    });
    res.on('end', () => { if (target !== undefined || !caughtUp) s.bad ||= 'the stream ended'; check(); });
  });
  s.req.end();
}
parentPort.on('message', (m) => { target = m; check(); });
`;

interface Result {
  last: number;
  count: number;
  bad: string;
}

const percentile = (values: number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * p))]!;

// The streams share one key, which may then hold them all.
const test = appSuite('the change feed: catching up never starves others', {
  app: { maxRequestsPerKey: STREAMS + 10, feed: { maxStreamsPerKey: STREAMS } },
});

test(`${STREAMS} streams catch up from 0 over ${EVENTS} events; PATCH and /healthz are answered meanwhile`, async ({ t }) => {
  await trackPets(
    t.store,
    Array.from({ length: EVENTS }, (_, i) => ({ petId: i + 1, quantity: 1 })),
  );
  const seeded = (await t.events()).length;
  assert.is(seeded, EVENTS);

  const lag = monitorEventLoopDelay({ resolution: 10 });
  lag.enable();
  const readers = new Worker(READERS, { eval: true, workerData: { port: t.port, key: t.key, streams: STREAMS, seeded } });
  const messages: { kind: string; streams?: Result[] }[] = [];
  let wake: () => void = () => {};
  readers.on('message', (m: { kind: string; streams?: Result[] }) => {
    messages.push(m);
    wake();
  });
  const failed = new Promise<never>((_, reject) => {
    readers.once('error', reject);
    readers.once('exit', (code) => reject(new Error(`the readers' thread exited (${code})`)));
  });
  // Waited for without a deadline of its own: a catch-up that never ends is caught by
  // the test run's timeout for the file.
  const message = (kind: string) =>
    Promise.race([
      failed,
      new Promise<{ kind: string; streams?: Result[] }>((resolve) => {
        const look = () => {
          const found = messages.find((m) => m.kind === kind);
          if (found) resolve(found);
          else wake = look;
        };
        look();
      }),
    ]);

  // The client of the requests timed keeps its connection, as a shop's client does.
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const ask = (method: string, path: string, body?: string) =>
    new Promise<number>((resolve, reject) => {
      const headers = body === undefined ? {} : { Authorization: `Bearer ${t.key}`, 'Content-Type': 'application/json' };
      const req = request({ host: '127.0.0.1', port: t.port, method, path, headers, agent }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode!));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(body);
    });
  try {
    const patch: number[] = [];
    const health: number[] = [];
    const caughtUp = message('caught-up');
    let done = false;
    void caughtUp.then(
      () => (done = true),
      () => (done = true),
    );
    for (let i = 0; !done; i++) {
      let started = performance.now();
      assert.is(await ask('PATCH', `/v1/inventory/${(i % 100) + 1}`, JSON.stringify({ quantity: i })), 200);
      patch.push(performance.now() - started);
      started = performance.now();
      assert.is(await ask('GET', '/healthz'), 200);
      health.push(performance.now() - started);
    }
    await caughtUp;
    lag.disable();

    const head = (await t.events()).length;
    readers.postMessage(head);
    const { streams = [] } = await message('result');
    assert.is(streams.length, STREAMS);
    for (const [i, s] of streams.entries()) {
      assert.is(s.bad, '', `stream ${i}: ${s.bad}`);
      assert.equal([s.count, s.last], [head, head], `stream ${i}: every event once, in order`);
    }

    const figures = `PATCH p50 ${percentile(patch, 0.5).toFixed(0)} ms, p99 ${percentile(patch, 0.99).toFixed(0)} ms, max ${Math.max(...patch).toFixed(0)} ms over ${patch.length}; /healthz p99 ${percentile(health, 0.99).toFixed(0)} ms, max ${Math.max(...health).toFixed(0)} ms; event loop lag p99 ${(lag.percentile(99) / 1e6).toFixed(0)} ms, max ${(lag.max / 1e6).toFixed(0)} ms`;
    // The first PATCH may be answered before the streams connect; the next ones come while they read.
    assert.ok(patch.length >= 3, `requests were answered while the streams caught up (${figures})`);
    console.log(`  ${figures}`);
  } finally {
    agent.destroy();
    await readers.terminate();
  }
});

test.run();
