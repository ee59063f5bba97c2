// Keys as the chained key log describes them, through a running service on every store:
// a read-only key reads all a key can read and changes nothing (403 insufficient_scope),
// and an api_keys row inserted, recreated or un-revoked behind the triggers does not
// authenticate, and the service warns, naming the key and never its hash.
import * as assert from 'uvu/assert';
import { generateKey, hashKey } from '../../src/store/keys.ts';
import type { TestApp } from '../kit/app.ts';
import { assertErrorShape } from '../kit/http.ts';
import { logged } from '../kit/logged.ts';
import { appSuite } from '../kit/suites.ts';

const auth = (key: string) => ({ Authorization: `Bearer ${key}` });

/** A key is refused now and stays refused after every instance read its keys again (a key change). */
async function refusedThroughout(t: TestApp, key: string, what: string): Promise<void> {
  assertErrorShape(await t.get('/v1/inventory', auth(key)), 401, 'unauthorized', `${what}: at once`);
  await t.keys.create(`other-${Date.now()}`, 'test');
  assertErrorShape(await t.get('/v1/inventory', auth(key)), 401, 'unauthorized', `${what}: after a key change`);
  assertErrorShape(await t.get('/v1/inventory/7', auth(key)), 401, 'unauthorized', `${what}: another path`);
}

function sqlText(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

const scope = appSuite('read-only keys', {
  async given(t) {
    await t.track(7, 3);
  },
});

scope('a read-only key reads everything a key can read, and a PATCH with it is 403 insufficient_scope', async ({ t }) => {
  const key = await t.keys.create('auditor', 'test', 'read-only');
  for (const path of ['/v1/inventory', '/v1/inventory/7', '/v1/events', '/v1/log/head']) {
    const res = await t.get(path, auth(key));
    assert.is(res.status, 200, `GET ${path}: ${res.text}`);
  }
  const before = (await t.events()).length;
  const refused = await t.patch(7, { quantity: 1 }, auth(key));
  assertErrorShape(refused, 403, 'forbidden');
  assert.is(refused.headers['www-authenticate'], 'Bearer error="insufficient_scope"');
  assert.is((await t.events()).length, before, 'nothing was written');
  // Its name is still the actor it reads as; a key that may write still writes.
  assert.is((await t.patch(7, { quantity: 1 })).status, 200);
  const listed = await t.keys.list();
  assert.equal(listed.map((k) => [k.name, k.scope]).sort(), [
    ['auditor', 'read-only'],
    ['tester', 'read-write'],
  ]);
});

const trust = appSuite('keys trusted only as the key log describes them');

trust('a key row inserted behind the triggers is refused by the running service, which warns naming it', async ({ t }) => {
  const key = generateKey();
  const hash = hashKey(key);
  await t.target.tamper.pastGuards(
    t.db,
    `INSERT INTO api_keys (name, hash, created_at, created_by) VALUES ('mallory', '${hash}', '2026-01-01T00:00:00.000Z', 'cli:root')`,
  );
  await refusedThroughout(t, key, 'an inserted key');
  const line = await logged(t, /"keyName":"mallory"/);
  assert.match(line, /inserted or recreated behind the triggers/);
  assert.not.ok(t.logs.join('').includes(hash), 'the hash is never logged');
  assert.not.ok(t.logs.join('').includes(key), 'the key is never logged');
});

trust('a key recreated behind the triggers (same name, new hash) is refused', async ({ t }) => {
  await t.keys.create('till', 'test');
  const key = generateKey();
  await t.target.tamper.pastGuards(
    t.db,
    `DELETE FROM api_keys WHERE name = 'till';
     INSERT INTO api_keys (name, hash, created_at, created_by)
     SELECT 'till', ${sqlText(hashKey(key))}, recorded_at, actor FROM api_key_events WHERE name = 'till'`,
  );
  await refusedThroughout(t, key, 'a recreated key');
  await logged(t, /"keyName":"till".*inserted or recreated/);
});

trust('a key un-revoked behind the triggers is refused by the running service, which warns naming it', async ({ t }) => {
  const key = await t.keys.create('till', 'test');
  assert.is((await t.get('/v1/inventory', auth(key))).status, 200);
  assert.is(await t.keys.revoke('till', 'test'), 'revoked');
  assertErrorShape(await t.get('/v1/inventory', auth(key)), 401, 'unauthorized');
  await t.target.tamper.pastGuards(t.db, "UPDATE api_keys SET revoked_at = NULL, revoked_by = NULL WHERE name = 'till'");
  await refusedThroughout(t, key, 'an un-revoked key');
  await logged(t, /"keyName":"till".*un-revoked behind the triggers/);
  // The key that was never tampered with still works.
  assert.is((await t.get()).status, 200);
});

trust('a read-only key made read-write behind the triggers is refused: its scope is chained', async ({ t }) => {
  const key = await t.keys.create('auditor', 'test', 'read-only');
  // The only place a scope lives is its KeyCreated's data, which the chain's hash covers.
  await t.target.tamper.pastGuards(t.db, "UPDATE api_key_events SET data = '' WHERE name = 'auditor'");
  await refusedThroughout(t, key, 'a rewritten scope');
  await logged(t, /"keyName":"auditor".*not chained into the key log/);
});

scope.run();
trust.run();
