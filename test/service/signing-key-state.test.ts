// What a key's trust rests on at start, on both stores, with the service as operators run
// it: a key of the log whose record of what it signed (`<key file>.signed`) is not beside
// it (copied to another host, or restored, without it) is refused in one line, while the
// log's first key starts without one and gets one; a SigningKeyAdded written with SQL,
// however well chained (no endorsement, or one signed by the key itself), is BROKEN for
// verify-log --db and the service refuses to sign with it, where keys entered by
// scripts/keys (endorsed, or --unendorsed) pass; endorse-signing gives the new key its
// record and says when the current key signed more of the log than the database holds;
// list-signing prints each key's verifier key and how it was entered.
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import * as assert from 'uvu/assert';
import { originOf, verifierKey } from '../../src/support/checkpoint.ts';
import { makeSigner } from '../../src/support/signing.ts';
import { tempDir, type TempDir } from '../kit/paths.ts';
import { runScript } from '../kit/scripts.ts';
import { killAll, spawnService, startService, WAIT_MS, withTimeout } from '../kit/service.ts';
import { newSigningKey } from '../kit/signing-keys.ts';
import { query } from '../kit/sql.ts';
import type { FreshDatabase } from '../kit/stores.ts';
import { targetSuites } from '../kit/suites.ts';
import { forgeSigningKey } from '../kit/tamper.ts';

interface Ctx {
  dir: TempDir;
  fresh: FreshDatabase;
}

const test = targetSuites<Ctx>('a signing key at start: its record of what it signed, and how the log entered it', {
  async beforeEach(ctx) {
    ctx.dir = tempDir('signing-key-state-');
    ctx.fresh = await ctx.target.fresh();
  },
  async afterEach(ctx) {
    await killAll();
    await ctx.fresh.cleanup();
    ctx.dir.cleanup();
  },
});

/** Starts the service on db with the key file, which must be refused in one line; that line. */
async function refused(db: string, keyFile: string, what: string): Promise<string> {
  const s = spawnService({ INVENTORY_DB: db, INVENTORY_SIGNING_KEY: keyFile });
  const { code } = await withTimeout(s.exited, WAIT_MS, `the service to refuse ${what}`);
  assert.is(code, 1, `${what}: exit ${code}\n${s.err()}`);
  assert.match(s.err(), /^petstore-inventory: [^\n]+\n$/, `${what}: one line\n${s.err()}`);
  return s.err();
}

/** A key file, made with a fresh key, with or without a record of nothing signed beside it. */
function keyFileIn(dir: TempDir, name: string, withRecord: boolean): { file: string; key: ReturnType<typeof newSigningKey> } {
  const key = newSigningKey();
  const file = dir.path(name);
  writeFileSync(file, key.pem, { mode: 0o600 });
  if (withRecord) writeFileSync(`${file}.signed`, '{"logs":{}}\n', { mode: 0o600 });
  return { file, key };
}

async function firstStart(ctx: Ctx, keyFile: string) {
  const s = await startService({ db: ctx.fresh.db, expectKey: true, env: { INVENTORY_SIGNING_KEY: keyFile } });
  assert.is((await s.get('/v1/log/checkpoint', s.bootstrapKey)).status, 200);
  assert.is((await s.stop()).code, 0);
}

test('a key of the log without its .signed beside it is refused in one line; the first key starts without one and gets one', async (ctx) => {
  const first = ctx.dir.path('a/key.pem');
  await firstStart(ctx, first);
  assert.ok(existsSync(`${first}.signed`), 'the first key got its record at its first start');

  // The key copied to another host, without its record.
  mkdirSync(ctx.dir.path('b'));
  const copied = ctx.dir.path('b/key.pem');
  copyFileSync(first, copied);
  const line = await refused(ctx.fresh.db, copied, 'a copied key without .signed');
  assert.ok(line.includes(`${copied}.signed`), line);
  assert.match(line, /carry .*\.signed with the key, or start with a new key endorsed by this one \(scripts\/keys endorse-signing/);

  // Carried with it, the key starts.
  copyFileSync(`${first}.signed`, `${copied}.signed`);
  const again = await startService({ db: ctx.fresh.db, expectKey: false, env: { INVENTORY_SIGNING_KEY: copied } });
  assert.is((await again.stop()).code, 0);
});

test('a SigningKeyAdded written with SQL is BROKEN for verify-log --db and refused at start; keys scripts/keys entered pass', async (ctx) => {
  const first = ctx.dir.path('first.pem');
  await firstStart(ctx, first);
  const verify = () => runScript('verify-log', [], { db: ctx.fresh.db });
  const env = { INVENTORY_SIGNING_KEY: first };
  const endorsed = keyFileIn(ctx.dir, 'endorsed.pem', false);
  assert.is((await runScript('keys', ['endorse-signing', endorsed.file], { db: ctx.fresh.db, env })).status, 0);
  const unendorsed = keyFileIn(ctx.dir, 'unendorsed.pem', false);
  assert.is((await runScript('keys', ['add-signing', unendorsed.file, '--unendorsed'], { db: ctx.fresh.db })).status, 0);
  const ok = await verify();
  assert.is(ok.status, 0, ok.stderr);

  const [{ logId }] = (await query<{ logId: string }>(
    { target: ctx.target, db: ctx.fresh.db },
    'SELECT log_id AS "logId" FROM log_identity',
  )) as [{ logId: string }];
  const forged = keyFileIn(ctx.dir, 'forged.pem', true);
  const signer = makeSigner(forged.key);
  await forgeSigningKey(ctx.target, ctx.fresh.db, forged.key, 'self-endorsed');
  const broken = await verify();
  assert.is(broken.status, 1, broken.stderr);
  assert.match(
    broken.stderr,
    new RegExp(
      `^error: BROKEN at key seq \\d+: the SigningKeyAdded of signing key ${signer.keyId} has an endorsement that does not verify .*: scripts/keys did not enter it\\n`,
      'm',
    ),
  );
  const line = await refused(ctx.fresh.db, forged.file, 'a key written with SQL');
  assert.ok(
    line.includes(`refusing to sign with ${forged.file}: the SigningKeyAdded of signing key ${signer.keyId} has an endorsement`),
    line,
  );

  const listed = await runScript('keys', ['list-signing'], { db: ctx.fresh.db });
  assert.is(listed.status, 0, listed.stderr);
  const rows = listed.stdout.trimEnd().split('\n').slice(1);
  assert.equal(
    rows.map((r) => r.split(/\s{2,}/).at(3)),
    ['first key', 'endorsed', 'UNENDORSED', 'NOT BY scripts/keys'],
  );
  const published = [first, endorsed.file, unendorsed.file, forged.file].map((file) =>
    verifierKey(originOf(logId), Buffer.from(makeSigner({ pem: readFileSync(file, 'utf8') }).publicKey, 'base64url')),
  );
  assert.equal(
    rows.map((r) => r.split(/\s+/).at(-1)),
    published,
    'each key`s verifier key, last on its line',
  );
});

test('a SigningKeyAdded with no endorsement and no unendorsed mark, written with SQL, is BROKEN too', async (ctx) => {
  await firstStart(ctx, ctx.dir.path('first.pem'));
  const forged = keyFileIn(ctx.dir, 'forged.pem', true);
  await forgeSigningKey(ctx.target, ctx.fresh.db, forged.key, 'none');
  const broken = await runScript('verify-log', [], { db: ctx.fresh.db });
  assert.is(broken.status, 1, broken.stderr);
  assert.match(broken.stderr, /has neither an endorsement nor the mark of a key added --unendorsed: scripts\/keys did not enter it/);
  const line = await refused(ctx.fresh.db, forged.file, 'a key written with SQL, unmarked');
  assert.ok(line.includes('has neither an endorsement nor the mark'), line);
});

test('endorse-signing gives the new key its record, and warns when the current key signed more of the log than it holds', async (ctx) => {
  const first = ctx.dir.path('first.pem');
  await firstStart(ctx, first);
  const recorded = JSON.parse(readFileSync(`${first}.signed`, 'utf8')) as { logs: Record<string, { size: number; root: string }> };
  const [logId] = Object.keys(recorded.logs);
  assert.ok(logId, `the first start recorded its checkpoint: ${JSON.stringify(recorded)}`);
  // As after a restore: the key signed a larger tree of this log than the database holds.
  writeFileSync(`${first}.signed`, JSON.stringify({ logs: { [logId]: { size: 1000, root: recorded.logs[logId]!.root } } }));
  const next = keyFileIn(ctx.dir, 'next.pem', false);
  const r = await runScript('keys', ['endorse-signing', next.file], { db: ctx.fresh.db, env: { INVENTORY_SIGNING_KEY: first } });
  assert.is(r.status, 0, r.stderr);
  assert.match(
    r.stderr,
    /^WARNING: the current key \S+ has signed this log further than, or differently from, this database: this key signed a tree of 1000 events for log \S+, which now holds 0: .*monitors that kept the current key's newer checkpoint will report BROKEN\n/m,
  );
  assert.equal(JSON.parse(readFileSync(`${next.file}.signed`, 'utf8')), { logs: {} }, 'the new key has signed nothing yet');
  const started = await startService({ db: ctx.fresh.db, expectKey: false, env: { INVENTORY_SIGNING_KEY: next.file } });
  assert.is((await started.stop()).code, 0);
});

test.run();
