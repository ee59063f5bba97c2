// verify-log's failures that are no usage error say what went wrong in one line and exit
// 1 (2 stays for usage): a --digests file that cannot be read, and a --url service that
// does not answer.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { closedPort } from '../kit/ports.ts';
import { runScript } from '../kit/scripts.ts';
import { tempDir } from '../kit/paths.ts';

const test = suite('verify-log: a file or a service it cannot reach');

test('--digests naming no file: "cannot read FILE: no such file", exit 1', async () => {
  const dir = tempDir('verify-log-messages-');
  try {
    const r = await runScript('verify-log', ['--digests', dir.path('nope.txt')], { db: dir.path('inventory.db') });
    assert.is(r.status, 1, r.stderr);
    assert.is(r.stderr, `error: cannot read ${dir.path('nope.txt')}: no such file\n`);
    assert.is(r.stdout, '');
  } finally {
    dir.cleanup();
  }
});

test('--url to a closed port: the service at URL did not answer (connection refused), exit 1', async () => {
  const url = `http://127.0.0.1:${await closedPort()}`;
  const r = await runScript('verify-log', ['--url', url], { env: { INVENTORY_KEY: 'pinv_x' } });
  assert.is(r.status, 1, r.stderr);
  assert.is(r.stderr, `error: the service at ${url} did not answer (connection refused: is it running, and on that host and port?)\n`);
  assert.is(r.stdout, '');
});

test.run();
