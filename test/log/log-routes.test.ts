// The verifiable log through the API, on both stores: the signed checkpoint, the
// inclusion and consistency proofs (checked here with Node's crypto and the RFC's
// verification steps, against the checkpoint's root), their refusals, one signature per
// tree size, and the head's checkpoint of the head's own size.
import { createHash, createPublicKey, generateKeyPairSync, verify } from 'node:crypto';
import * as assert from 'uvu/assert';
import { rootFromInclusion, verifyConsistency } from '../../src/support/merkle-verify.ts';
import { makeCommandHandler } from '../../src/application/write/commands.ts';
import { startApp, type TestApp } from '../kit/app.ts';
import { openStore } from '../kit/stores.ts';
import { appSuite } from '../kit/suites.ts';

const KEY = { pem: generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }) as string };
const sha256 = (...parts: Buffer[]) => createHash('sha256').update(Buffer.concat(parts)).digest();

interface PublishedKey {
  keyId: string;
  publicKey: string;
  verifierKey: string;
}

/** A checkpoint's fields, its signature checked with the published verifier key. */
async function checkpointOf(t: TestApp, note?: string) {
  const res = note === undefined ? await t.get('/v1/log/checkpoint') : undefined;
  if (res) {
    assert.is(res.status, 200, res.text);
    assert.is(res.headers['content-type'], 'text/plain; charset=utf-8');
  }
  const text = note ?? res!.text;
  const [vkey] = JSON.parse((await t.get('/v1/log/signing-keys')).text) as PublishedKey[];
  // The name holds no '+'; the key's base64 may.
  const [, name, keyHash, key] = /^([^+]+)\+([0-9a-f]{8})\+(.+)$/.exec(vkey!.verifierKey) as unknown as [string, string, string, string];
  const body = text.slice(0, text.lastIndexOf('\n\n') + 1);
  const [origin, size, root, keys, time] = body.split('\n');
  const sig = /^\u2014 (\S+) (\S+)\n$/.exec(text.slice(body.length + 1));
  assert.ok(sig, text);
  assert.is(sig[1], name);
  const bytes = Buffer.from(sig[2]!, 'base64');
  assert.is(bytes.subarray(0, 4).toString('hex'), keyHash);
  const raw = Buffer.from(key, 'base64').subarray(1);
  assert.ok(
    verify(
      null,
      Buffer.from(body),
      createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: raw.toString('base64url') }, format: 'jwk' }),
      bytes.subarray(4),
    ),
  );
  return { origin: origin!, size: Number(size), root: Buffer.from(root!, 'base64'), keys: keys!, time: time!, text };
}

const hashes = (res: { text: string }) => (JSON.parse(res.text) as { hashes: string[] }).hashes.map((h) => Buffer.from(h, 'base64'));

const log = appSuite('the verifiable log', { app: { signingKey: KEY, writer: 'thread' } });

log('an empty log is size 0 with the empty root; the checkpoint names the log and its key log', async ({ t }) => {
  const head = JSON.parse((await t.get('/v1/log/head')).text) as {
    logId: string;
    seq: number;
    keys: { seq: number; hash: string };
    checkpoint: string;
  };
  assert.is(head.seq, 0);
  const c = await checkpointOf(t);
  assert.is(c.origin, `petstore-inventory/${head.logId}`);
  assert.is(c.size, 0);
  assert.is(c.root.toString('base64'), '47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=');
  assert.is(c.keys, `keys ${head.keys.seq} ${head.keys.hash}`);
  assert.match(c.time, /^time \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  assert.is(head.checkpoint, c.text, 'the head carries the same checkpoint');
});

log('every event is in the checkpoint`s tree, and the tree of today extends every earlier one', async ({ t }) => {
  await t.track(1, 3);
  const kept = [await checkpointOf(t)];
  for (let i = 0; i < 12; i += 1) {
    if (i % 3 === 0) await t.track(100 + i, i);
    assert.is((await t.patch(1, { quantity: i })).status, 200);
    kept.push(await checkpointOf(t));
  }
  const now = kept.at(-1)!;
  const events = await t.events();
  assert.is(now.size, events.length);
  for (const e of events) {
    const res = await t.get(`/v1/log/proof/inclusion?seq=${e.seq}&size=${now.size}`);
    assert.is(res.status, 200, res.text);
    assert.is((JSON.parse(res.text) as { seq: number }).seq, Number(e.seq));
    const leaf = sha256(Buffer.from([0]), Buffer.from(e.hash!, 'hex'));
    assert.ok(rootFromInclusion(Number(e.seq) - 1, now.size, leaf, hashes(res))?.equals(now.root), `seq ${e.seq}`);
  }
  for (const old of kept) {
    const res = await t.get(`/v1/log/proof/consistency?from=${old.size}&to=${now.size}`);
    assert.is(res.status, 200, res.text);
    assert.ok(verifyConsistency(old.size, now.size, old.root, now.root, hashes(res)), `from ${old.size}`);
  }
});

log('the receipt`s checkpoint is the one the log serves for its size: one signature per tree size', async ({ t }) => {
  await t.track(1, 3);
  const res = await t.patch(1, { quantity: 4 });
  const note = Buffer.from(/checkpoint=:([^:]+):/.exec(String(res.headers['log-receipt']))![1]!, 'base64').toString('utf8');
  assert.is((await t.get('/v1/log/checkpoint')).text, note);
  assert.is((await checkpointOf(t, note)).size, 2);
  // A size only an operator command wrote is signed once, when first asked for.
  await t.track(2, 1);
  const first = (await t.get('/v1/log/checkpoint')).text;
  assert.is((await t.get('/v1/log/checkpoint')).text, first);
  assert.is((await checkpointOf(t, first)).size, 3);
});

log('a read-only key may ask; a size past the head is 409 tree_size_past_head; nonsense is 400', async ({ t }) => {
  await t.track(1, 3);
  await t.patch(1, { quantity: 4 });
  const reader = await t.keys.create('auditor', 'test', 'read-only');
  const asReader = (path: string) => t.request({ path, headers: { Authorization: `Bearer ${reader}` } });
  assert.is((await asReader('/v1/log/checkpoint')).status, 200);
  assert.is((await asReader('/v1/log/proof/inclusion?seq=1&size=2')).status, 200);
  assert.is((await asReader('/v1/log/proof/consistency?from=1&to=2')).status, 200);
  assert.equal(JSON.parse((await asReader('/v1/log/proof/consistency?from=2&to=2')).text), { from: 2, to: 2, hashes: [] });
  for (const path of ['/v1/log/proof/inclusion?seq=1&size=3', '/v1/log/proof/consistency?from=1&to=9']) {
    const res = await asReader(path);
    assert.is(res.status, 409, path);
    const body = JSON.parse(res.text) as { code: string; message: string; status: number };
    assert.is(body.code, 'tree_size_past_head');
    assert.match(body.message, /size (3|9)/);
  }
  for (const query of [
    'inclusion?seq=0&size=2',
    'inclusion?seq=3&size=2',
    'inclusion?seq=007&size=9',
    'inclusion?seq=1e3&size=9000',
    'inclusion?seq=+1&size=2',
    'inclusion?seq=1',
    'inclusion?seq=1&size=0x10',
    'inclusion?seq=1&size=9223372036854775808',
    'consistency?from=0&to=2',
    'consistency?from=2&to=1',
    'consistency?from=-1&to=1',
    'consistency?to=1',
    'consistency?from=1&to=1&to=2',
  ]) {
    const res = await asReader(`/v1/log/proof/${query}`);
    assert.is(res.status, 400, query);
    assert.is((JSON.parse(res.text) as { code: string }).code, 'bad_request', query);
  }
  // A count past what the log can hold says the largest it takes.
  const huge = await asReader('/v1/log/proof/inclusion?seq=1&size=9223372036854775807');
  assert.match((JSON.parse(huge.text) as { message: string }).message, 'from 1 to 9007199254740991');
  // Only the operation's parameters, each once, as on the other routes with a query.
  for (const query of ['inclusion?seq=1&size=2&x=1', 'consistency?from=1&to=2&verbose=true']) {
    const res = await asReader(`/v1/log/proof/${query}`);
    assert.is(res.status, 400, query);
    assert.match((JSON.parse(res.text) as { message: string }).message, /unknown query parameter "(x|verbose)"/, query);
  }
  assert.is((await t.request({ path: '/v1/log/checkpoint' })).status, 401);
});

log('the head and its checkpoint are of one tree size, even when a commit lands between reads', async ({ target }) => {
  // The store the app reads: once armed, its first read of the head commits another event
  // before it answers the head as it was, and every other read waits for that commit. A
  // route that read the head twice would see two sizes.
  let armed = false;
  let committed: Promise<unknown> = Promise.resolve();
  const app = await startApp({
    target,
    signingKey: KEY,
    writer: 'thread',
    open: async (db, now) => {
      const store = await openStore(db, { now, writer: 'thread', signingKey: KEY });
      const commands = makeCommandHandler({ store, now });
      return {
        ...store,
        async logHead() {
          if (!armed) {
            await committed;
            return store.logHead();
          }
          armed = false;
          let done!: () => void;
          committed = new Promise<void>((resolve) => (done = resolve));
          const head = await store.logHead();
          await commands.handle(
            { type: 'TrackPet', petId: 99n, quantity: 1, status: 'available' },
            { actor: 'cli:test', requestId: 'between' },
          );
          done();
          return head;
        },
      };
    },
  });
  try {
    await app.track(1, 1);
    armed = true;
    const head = JSON.parse((await app.get('/v1/log/head')).text) as { seq: number; checkpoint: string };
    assert.not.ok(armed, 'the commit between the reads was made');
    assert.is(head.seq, 1);
    assert.is(head.checkpoint.split('\n')[1], '1', 'the checkpoint is of the head answered');
    const after = JSON.parse((await app.get('/v1/log/head')).text) as { seq: number; checkpoint: string };
    assert.equal([after.seq, after.checkpoint.split('\n')[1]], [2, '2']);
  } finally {
    await app.close();
  }
});

log.run();
