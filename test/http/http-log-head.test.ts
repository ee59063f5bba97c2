// GET /v1/log/head answers the digests an auditor keeps: the newest event's seq and hash
// and the key log's head, exactly what verify-log prints and takes; key required. The
// service logs the same head once a minute while the log grows.
import { generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { logHeadWhileGrowing } from '../../src/application/read/log-head.ts';
import { createLogger } from '../../src/support/logger.ts';
import { formatDigest, GENESIS_HASH } from '../../src/store/hash-chain.ts';
import type { LogHead } from '../../src/store/audit-reads.ts';
import { verifyLog } from '../../src/application/verify/verify-log.ts';
import { appSuite } from '../kit/suites.ts';

const doc = JSON.parse(readFileSync(new URL('../../src/openapi.json', import.meta.url), 'utf8')) as object;
const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
ajv.addSchema(doc, 'openapi');
const conformsToLogHead = (body: unknown) =>
  assert.ok(ajv.validate({ $ref: 'openapi#/components/schemas/LogHead' }, body), `LogHead: ${ajv.errorsText()}`);

// Signing as the service does: its heads carry a signature (test/application/signed-log.test.ts checks it).
const signingKey = { pem: generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }) as string };
const head = appSuite('GET /v1/log/head', { app: { signingKey } });

head('an empty log: seq 0 and 64 zeros; the key log already holds the signing key and the tester key', async ({ t }) => {
  const res = await t.get('/v1/log/head');
  assert.is(res.status, 200);
  assert.is(res.headers['cache-control'], 'no-store');
  const body = JSON.parse(res.text) as Record<string, unknown>;
  conformsToLogHead(body);
  assert.equal([body.seq, body.hash, body.recordedAt, body.digest], [0, GENESIS_HASH, null, `0:${GENESIS_HASH}`]);
  assert.is(body.time, '2026-01-02T03:04:05.678Z');
  assert.is((body.keys as { seq: number }).seq, 2);
});

head('answers the digests verify-log prints and takes, and moves with every write', async ({ t }) => {
  await t.track(7, 3);
  assert.is((await t.patch(7, { quantity: 5 })).status, 200);
  const body = JSON.parse((await t.get('/v1/log/head')).text) as {
    seq: number;
    digest: string;
    recordedAt: string;
    keys: { digest: string };
  };
  conformsToLogHead(body);
  const verdict = await verifyLog(t.store);
  assert.ok(verdict.ok);
  if (!verdict.ok) return;
  assert.equal([body.seq, body.digest, body.keys.digest], [2, formatDigest(verdict.head), formatDigest(verdict.keyHead)]);
  assert.is(body.recordedAt, (await t.events())[1]!.recordedAt);
  await t.keys.create('auditor', 'cli:ops');
  const later = JSON.parse((await t.get('/v1/log/head')).text) as { keys: { seq: number } };
  assert.is(later.keys.seq, 3);
});

head('needs a key, like everything under /v1; other methods are 405', async ({ t }) => {
  const res = await t.request({ path: '/v1/log/head' });
  assert.is(res.status, 401);
  const post = await t.request({ method: 'POST', path: '/v1/log/head', headers: { Authorization: `Bearer ${t.key}` } });
  assert.is(post.status, 405);
  assert.is(post.headers.allow, 'GET, HEAD, OPTIONS');
});

head.run();

const logged = suite('the head in the service log');

logged('logged at start, then once per interval only while it changed', async () => {
  const lines: string[] = [];
  const logger = createLogger(
    'info',
    new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    }),
  );
  let current: LogHead = {
    logId: '00000000-0000-4000-8000-000000000000',
    seq: 3,
    hash: 'a'.repeat(64),
    recordedAt: '2026-01-01T00:00:00.000Z',
    keys: { seq: 1, hash: 'b'.repeat(64) },
  };
  // The test is the timer: each tick is one interval's check, awaited.
  let tick: () => Promise<void> = () => Promise.reject(new Error('no timer was started'));
  let stopped = false;
  const stop = logHeadWhileGrowing({
    store: { logHead: () => Promise.resolve(current) },
    logger,
    now: () => 0,
    every: (_intervalMs, check) => {
      tick = check;
      return () => (stopped = true);
    },
  });
  try {
    await tick();
    await tick();
    current = { ...current, seq: 4, hash: 'c'.repeat(64) };
    await tick();
    await tick();
  } finally {
    stop();
  }
  assert.ok(stopped, 'the timer is stopped');
  const heads = lines.map((l) => JSON.parse(l) as { msg: string; logHead: { digest: string; keys: { digest: string } } });
  assert.equal(
    heads.map((h) => [h.msg, h.logHead.digest, h.logHead.keys.digest]),
    [
      ['log head', `3:${'a'.repeat(64)}`, `keys:1:${'b'.repeat(64)}`],
      ['log head', `4:${'c'.repeat(64)}`, `keys:1:${'b'.repeat(64)}`],
    ],
  );
});

logged.run();
