// The clients' guide's Python feed verifier (docs/clients.md, "Following the log"), run as
// written against the service on each store: over a log of more than one page, with a
// pet id above 2^53 (which a double rounds) and an operator whose name is not ASCII, it
// prints the head's digest; it resumes from a kept digest; and an event changed in the
// database past the triggers is BROKEN at that event.
import { spawn } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import * as assert from 'uvu/assert';
import { startApp, type TestApp } from '../kit/app.ts';
import { fencedBlocks } from '../kit/docs.ts';
import { trackPets } from '../kit/fixtures.ts';
import { tempDir } from '../kit/paths.ts';
import { targetSuites } from '../kit/suites.ts';
import { needing, tools } from '../kit/tools.ts';

const BIG = 9007199254740993n;
/** More events than the script's page of 1000, so that it follows a second page. */
const PETS = 1100;
/** The service signs its head, which the script's digest is compared with. */
const SIGNING_KEY = { pem: generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }) as string };

function verifierCode(): string {
  const found = fencedBlocks('docs/clients.md', 'python').filter((b) => b.startsWith('# verify_feed.py:'));
  assert.is(found.length, 1, 'one verify_feed.py block in docs/clients.md');
  return found[0]!;
}

/** Runs the script (not spawnSync: the service it reads runs in this process). */
function run(script: string, args: string[], key: string): Promise<{ status: number | null; out: string; err: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('python3', [script, ...args], {
      env: { ...process.env, INVENTORY_KEY: key },
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 120_000,
    });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (err += c));
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, out, err }));
  });
}

async function headDigest(t: TestApp): Promise<string> {
  const head = await t.get('/v1/log/head');
  assert.is(head.status, 200, head.text);
  return (JSON.parse(head.text) as { digest: string }).digest;
}

const test = targetSuites("the clients' guide's Python feed verifier");

needing(test, [tools.python3])(
  'it verifies the chain over several pages, a pet id above 2^53 and a non-ASCII actor, resumes from a digest, and fails on a changed event',
  async ({ target }) => {
    const t = await startApp({ target, signingKey: SIGNING_KEY });
    const dir = tempDir('feed-verifier-');
    try {
      const script = dir.path('verify_feed.py');
      writeFileSync(script, verifierCode());
      const url = `http://127.0.0.1:${t.port}`;
      await trackPets(
        t.store,
        Array.from({ length: PETS }, (_, i) => ({ petId: i + 1, quantity: i })),
        'cli:zoë',
      );
      await trackPets(t.store, [{ petId: BIG, quantity: 3, status: 'pending' }], 'cli:zoë');
      const patched = await t.patch(BIG, { quantity: 9 }, { 'X-Request-Id': 'delivery-2026.11:21' });
      assert.is(patched.status, 200, patched.text);
      const events = await t.events();
      assert.ok(
        events.some((e) => e.petId === BIG && e.actor === 'cli:zoë'),
        'the log holds the events that trip a naive recipe',
      );

      const whole = await run(script, [url], t.key);
      assert.is(whole.status, 0, whole.err);
      const digest = await headDigest(t);
      assert.is(whole.out, `${digest}\n`);

      assert.is((await t.patch(5, { quantity: 50 })).status, 200);
      const resumed = await run(script, [url, digest], t.key);
      assert.is(resumed.status, 0, resumed.err);
      assert.is(resumed.out, `${await headDigest(t)}\n`);

      const big = events.find((e) => e.petId === BIG && e.type === 'PetTracked')!;
      await target.tamper.pastGuards(
        t.db,
        `UPDATE events SET data = replace(data, '"quantity":3,', '"quantity":4,') WHERE seq = ${big.seq}`,
      );
      const broken = await run(script, [url], t.key);
      assert.is(broken.status, 1, broken.out);
      assert.is(broken.err, `BROKEN at seq ${big.seq}\n`);
    } finally {
      await t.close();
      dir.cleanup();
    }
  },
);

test.run();
