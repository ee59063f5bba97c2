// The signing key file as the service finds it at start: one that is no usable key
// (empty, not PEM, RSA, Ed448, encrypted, a public key) stops the start with exit 1 and
// one line that says what the file must be and how to make one; a key that cannot be
// made (its folder is not writable) says so plainly; a key other users may read is used,
// with a warning that names the file and chmod 600. The key is read before the database
// is opened, so one store (SQLite) shows it.
import { generateKeyPairSync } from 'node:crypto';
import { chmodSync, existsSync, writeFileSync } from 'node:fs';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { tempDir, type TempDir } from '../kit/paths.ts';
import { killAll, spawnService, startService, WAIT_MS, withTimeout } from '../kit/service.ts';

const keyFile = suite<{ dir: TempDir }>('the signing key file at start');

keyFile.before.each((ctx) => {
  ctx.dir = tempDir('signing-key-file-');
});
keyFile.after.each(async (ctx) => {
  await killAll();
  ctx.dir.cleanup();
});

/** Starts the service on a new database with the key at keyPath; it must exit 1 at once. */
async function refusedStart(dir: TempDir, keyPath: string, what: string): Promise<string> {
  const s = spawnService({ INVENTORY_DB: dir.path('inventory.db'), INVENTORY_SIGNING_KEY: keyPath, PORT: '0' });
  const { code } = await withTimeout(s.exited, WAIT_MS, `the service to refuse ${what}`);
  assert.is(code, 1, `${what}: exit ${code}\nstderr: ${s.err()}`);
  assert.match(s.err(), /^[^\n]+\n$/, `${what}: one line\n${s.err()}`);
  assert.ok(s.err().startsWith(`petstore-inventory: cannot use the signing key ${keyPath}: `), `${what}: ${s.err()}`);
  assert.not.match(s.err(), /DECODER|routines|\.tmp|\n\s+at /, `${what}: no library's words, no temporary file, no stack`);
  assert.is(s.out(), '', `${what}: nothing logged`);
  assert.not.ok(existsSync(dir.path('inventory.db')), `${what}: no database made`);
  return s.err();
}

keyFile('a file that is no usable key: exit 1, saying what it must be and the openssl command that makes one', async ({ dir }) => {
  const pkcs8 = (type: 'rsa' | 'ed448' | 'ed25519', extra: object = {}) =>
    generateKeyPairSync(type as 'ed25519', type === 'rsa' ? { modulusLength: 1024 } : {}).privateKey.export({
      type: 'pkcs8',
      format: 'pem',
      ...extra,
    }) as string;
  const cases: [string, string, RegExp][] = [
    ['empty', '', /it is empty/],
    ['corrupt', '-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n', /it is not a PEM private key/],
    ['not PEM', 'hello\n', /it is not a PEM private key/],
    ['RSA', pkcs8('rsa'), /it is an rsa key, not Ed25519/],
    ['Ed448', pkcs8('ed448'), /it is an ed448 key, not Ed25519/],
    ['encrypted', pkcs8('ed25519', { cipher: 'aes-256-cbc', passphrase: 'secret-words' }), /it is encrypted/],
    [
      'a public key',
      generateKeyPairSync('ed25519').publicKey.export({ type: 'spki', format: 'pem' }) as string,
      /it is not a PEM private key/,
    ],
  ];
  for (const [what, text, reason] of cases) {
    const path = dir.path(`${what.replace(/ /g, '-')}.pem`);
    writeFileSync(path, text, { mode: 0o600 });
    const err = await refusedStart(dir, path, what);
    assert.match(err, reason, what);
    assert.ok(err.includes('PKCS#8 PEM Ed25519 private key'), `${what}: says what the file must be\n${err}`);
    assert.ok(err.includes(`openssl genpkey -algorithm ed25519 -out ${path}`), `${what}: says how to make one\n${err}`);
  }
});

keyFile('a key to be made in a folder the service cannot write: says so plainly', async ({ dir }) => {
  // sysfs takes no new files, from any user (chmod would not stop a root test run).
  const path = '/sys/inventory-signing-key-test.pem';
  const err = await refusedStart(dir, path, 'a read-only folder');
  assert.match(err, /the folder \/sys is read-only or not writable by this user \((EACCES|EROFS|EPERM)\)/);
  assert.ok(err.includes(`openssl genpkey -algorithm ed25519 -out ${path}`), err);
});

keyFile('a key other users may read is used, with a warning naming the file and chmod 600; a 0600 one without', async ({ dir }) => {
  const path = dir.path('signing.pem');
  writeFileSync(path, generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }));
  chmodSync(path, 0o640);
  const warned = await startService({ db: dir.path('inventory.db'), expectKey: true, env: { INVENTORY_SIGNING_KEY: path } });
  const line = warned
    .out()
    .split('\n')
    .find((l) => l.includes('may be read or changed by other users'));
  assert.ok(line, `a warning at start\n${warned.out()}`);
  const logged = JSON.parse(line) as { level: number | string; msg: string; file: string };
  assert.is(logged.file, path);
  assert.ok(logged.msg.includes(`chmod 600 ${path}`), logged.msg);
  assert.is((await warned.stop()).code, 0);

  chmodSync(path, 0o600);
  const quiet = await startService({ db: dir.path('inventory.db'), expectKey: false, env: { INVENTORY_SIGNING_KEY: path } });
  assert.not.ok(quiet.out().includes('chmod 600'), quiet.out());
  assert.is((await quiet.stop()).code, 0);
});

keyFile(
  'on a log that has keys, a key it has not endorsed, or no key file, stops the start in one line naming endorse-signing',
  async ({ dir }) => {
    const db = dir.path('inventory.db');
    const first = await startService({ db, expectKey: true, env: { INVENTORY_SIGNING_KEY: dir.path('first.pem') } });
    assert.is((await first.stop()).code, 0);
    const other = dir.path('other.pem');
    writeFileSync(other, generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
    for (const [path, what] of [
      [other, 'a key the log has not endorsed'],
      [dir.path('missing.pem'), 'no key file'],
    ] as const) {
      const s = spawnService({ INVENTORY_DB: db, INVENTORY_SIGNING_KEY: path, PORT: '0' });
      const { code } = await withTimeout(s.exited, WAIT_MS, `the service to refuse ${what}`);
      assert.is(code, 1, `${what}: exit ${code}\nstderr: ${s.err()}`);
      assert.match(s.err(), /^petstore-inventory: [^\n]*scripts\/keys endorse-signing[^\n]*\n$/, `${what}: one line\n${s.err()}`);
    }
    assert.not.ok(existsSync(dir.path('missing.pem')), 'a missing key file is not left behind');
    const again = await startService({ db, expectKey: false, env: { INVENTORY_SIGNING_KEY: dir.path('first.pem') } });
    assert.is((await again.stop()).code, 0, 'the log`s own key still starts');
  },
);

keyFile.run();
