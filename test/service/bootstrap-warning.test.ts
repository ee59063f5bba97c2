// A database whose keys were all revoked gets no new key at start; the service says so.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { noActiveKeyWarning } from '../../src/application/access/bootstrap.ts';
import { openSqliteStore } from '../../src/store/sqlite/store.ts';

test('the start warns when no active key exists, and only then', async () => {
  const store = await openSqliteStore(':memory:');
  try {
    assert.is(await noActiveKeyWarning(store.keys), undefined, 'a new database gets the bootstrap key instead');
    await store.keys.create('a', 'test');
    await store.keys.create('b', 'test');
    await store.keys.revoke('a', 'test');
    assert.is(await noActiveKeyWarning(store.keys), undefined, 'one key is still active');
    await store.keys.revoke('b', 'test');
    assert.match((await noActiveKeyWarning(store.keys)) ?? '', /no active API key exists/);
  } finally {
    await store.close();
  }
});

test.run();
