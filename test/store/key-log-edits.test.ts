// A key in use, held in memory, whose rows are then edited behind the triggers (no key
// change announced it): every store refuses it within the revocation bound and warns,
// naming the key and never its secret or hash. SQLite sees the edit at the next request
// (the database changed); PostgreSQL, which serves keys from memory, sees it through the
// key tables' digest that each heartbeat of its notification connection reads.
import { setTimeout as sleep } from 'node:timers/promises';
import * as assert from 'uvu/assert';
import { hashKey } from '../../src/store/keys.ts';
import { KEYS_FRESH_MS } from '../../src/store/postgres/changes.ts';
import type { TestApp } from '../kit/app.ts';
import { assertErrorShape } from '../kit/http.ts';
import { logged } from '../kit/logged.ts';
import { appSuite } from '../kit/suites.ts';

const auth = (key: string) => ({ Authorization: `Bearer ${key}` });

/** A key that has been answered from memory: several requests, some time apart. */
async function inUse(t: TestApp, name: string, scope: 'read-only' | 'read-write'): Promise<string> {
  const key = await t.keys.create(name, 'test', scope);
  for (let i = 0; i < 5; i++) {
    assert.is((await t.get('/v1/inventory', auth(key))).status, 200);
    await sleep(KEYS_FRESH_MS / 2);
  }
  return key;
}

/** Past the revocation bound, by this process's clock, the key is refused, also later. */
async function refusedWithinBound(t: TestApp, key: string, what: string): Promise<void> {
  await sleep(KEYS_FRESH_MS + 50);
  assertErrorShape(await t.get('/v1/inventory', auth(key)), 401, 'unauthorized', `${what}: past the bound`);
  await sleep(KEYS_FRESH_MS);
  assertErrorShape(await t.get('/v1/inventory/7', auth(key)), 401, 'unauthorized', `${what}: still`);
}

function neverLogged(t: TestApp, key: string): void {
  const all = t.logs.join('');
  assert.not.ok(all.includes(key), 'the key is never logged');
  assert.not.ok(all.includes(hashKey(key)), 'its hash is never logged');
}

const edits = appSuite('a key in use, its rows edited behind the triggers', {
  async given(t) {
    await t.track(7, 3);
  },
});

edits('its scope rewritten in the key log: refused within the bound, with a warning naming it', async ({ t }) => {
  const key = await inUse(t, 'auditor', 'read-only');
  await t.target.tamper.pastGuards(t.db, "UPDATE api_key_events SET data = '' WHERE name = 'auditor'");
  await refusedWithinBound(t, key, 'a rewritten scope');
  await logged(t, /"keyName":"auditor".*not chained into the key log/);
  neverLogged(t, key);
  assert.is((await t.get()).status, 200, 'the key that was not edited still works');
});

edits('its hash in the key log changed: refused within the bound, with a warning naming it', async ({ t }) => {
  const key = await inUse(t, 'till', 'read-write');
  await t.target.tamper.pastGuards(t.db, `UPDATE api_key_events SET key_hash = '${'0'.repeat(64)}' WHERE name = 'till'`);
  await refusedWithinBound(t, key, 'a changed hash');
  await logged(t, /"keyName":"till".*no KeyCreated for this key/);
  neverLogged(t, key);
});

edits('revoked in api_keys without its event: refused within the bound', async ({ t }) => {
  const key = await inUse(t, 'till', 'read-write');
  await t.target.tamper.pastGuards(
    t.db,
    "UPDATE api_keys SET revoked_at = '2026-01-01T00:00:00.000Z', revoked_by = 'mallory' WHERE name = 'till'",
  );
  await refusedWithinBound(t, key, 'a revocation without its event');
  neverLogged(t, key);
});

edits.run();
