// A PostgreSQL URL carries its password in the user part or as a query parameter
// (`password`, and `sslpassword` for a client key): neither form may reach the service's
// logs, its error messages, /readyz, /metrics or an operator command's output.
import { randomBytes } from 'node:crypto';
import { createServer, type AddressInfo } from 'node:net';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { redactUrl } from '../../src/store/postgres/connection.ts';
import { postgresTarget } from '../kit/postgres-target.ts';
import { runScript } from '../kit/scripts.ts';
import { killAll, spawnService, startService, WAIT_MS, withTimeout } from '../kit/service.ts';

/** The URL with its user-part password moved into the query as `password=…`. */
function passwordAsParameter(url: string): { url: string; password: string } {
  const parsed = new URL(url);
  const password = decodeURIComponent(parsed.password);
  parsed.password = '';
  parsed.searchParams.set('password', password);
  return { url: parsed.toString(), password };
}

/** A port on 127.0.0.1 where nothing listens. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

const redact = suite('redactUrl');

redact('masks a password in every form the driver reads, and keeps what is not secret', () => {
  const cases: [string, string][] = [
    ['postgres://app:s3cret@db.example:5432/inv', 'postgres://app:***@db.example:5432/inv'],
    ['postgres://app@db.example/inv?password=s3cret', 'postgres://app@db.example/inv?password=***'],
    ['postgresql://app@db.example/inv?sslmode=require&password=s3cret', 'postgresql://app@db.example/inv?sslmode=require&password=***'],
    [
      'postgres://app@db.example/inv?sslkey=/etc/app.key&sslpassword=s3cret',
      'postgres://app@db.example/inv?sslkey=%2Fetc%2Fapp.key&sslpassword=***',
    ],
    ['postgres://app@db.example/inv?PASSWORD=s3cret', 'postgres://app@db.example/inv?PASSWORD=***'],
    ['postgres://app@db.example/inv?password=one&password=s3cret', 'postgres://app@db.example/inv?password=***'],
    ['postgres://app@db.example/inv?password=s3%26cret', 'postgres://app@db.example/inv?password=***'],
    ['postgres://app@db.example/inv?password=ab#s3cret', 'postgres://app@db.example/inv?password=***'],
    ['postgres://app:p%40ss@db.example/inv?password=s3cret', 'postgres://app:***@db.example/inv?password=***'],
  ];
  for (const [url, shown] of cases) {
    assert.is(redactUrl(url), shown, url);
    assert.not.match(redactUrl(url), /s3cret|s3%26cret|p%40ss/, url);
  }
  // Not a URL the parser reads (a host-less URL with credentials): nothing of it is shown.
  assert.is(redactUrl('postgres://app:s3cret@/inv'), 'the PostgreSQL database');
});

redact.run();

const service = suite('the service and the commands with a password in the URL', {
  cleanups: [] as (() => Promise<void>)[],
});

service.after.each(async (ctx) => {
  await killAll();
  for (const cleanup of ctx.cleanups.splice(0)) await cleanup();
});

service('a running service shows the password as a parameter nowhere: logs, /readyz, /metrics', async (ctx) => {
  const fresh = await postgresTarget().fresh();
  ctx.cleanups.push(fresh.cleanup);
  const { url, password } = passwordAsParameter(fresh.db);
  assert.ok(password.length >= 8, 'the test server has a password');
  const s = await startService({ db: url, expectKey: true, env: { LOG_LEVEL: 'trace' } });
  const listening = s
    .out()
    .split('\n')
    .find((line) => line.includes('"msg":"listening"'));
  assert.match(listening ?? '', 'password=***', 'the listening line names the database, password masked');
  const shown: string[] = [s.out(), s.err()];
  for (const path of ['/readyz', '/metrics', '/healthz']) shown.push((await s.get(path)).text);
  shown.push((await s.get('/v1/inventory', s.bootstrapKey)).text);
  await s.stop();
  shown.push(s.out(), s.err());
  for (const text of shown) assert.not.ok(text.includes(password), `the password is shown:\n${text.slice(0, 2000)}`);
});

service('a database that cannot be reached: the error names it without the password, in either form', async () => {
  const port = await closedPort();
  const secret = randomBytes(9).toString('hex');
  for (const url of [
    `postgres://app:${secret}@127.0.0.1:${port}/inv`,
    `postgres://app@127.0.0.1:${port}/inv?password=${secret}`,
    `postgres://app@127.0.0.1:${port}/inv?sslmode=disable&sslpassword=${secret}`,
  ]) {
    const s = spawnService({ INVENTORY_DB: url });
    const { code } = await withTimeout(s.exited, WAIT_MS, 'the service to give up');
    assert.is(code, 1, `exit 1 for ${redactUrl(url)}`);
    assert.match(s.err(), 'cannot use the database', 'it says what failed');
    assert.match(s.err(), `127.0.0.1:${port}`, 'it names the server');
    assert.not.ok((s.out() + s.err()).includes(secret), `the password is shown:\n${s.err()}`);
    const r = await runScript('keys', ['list'], { db: url });
    assert.is(r.status, 1, r.what);
    assert.match(r.stderr, /^error: /, 'an operator error line');
    assert.not.ok((r.stdout + r.stderr).includes(secret), `the command shows the password:\n${r.stderr}`);
  }
});

service('operator commands on a reachable database never print the password parameter', async (ctx) => {
  const fresh = await postgresTarget().fresh();
  ctx.cleanups.push(fresh.cleanup);
  const { url, password } = passwordAsParameter(fresh.db);
  const results = [
    await runScript('migrate', [], { db: url }),
    await runScript('keys', ['create', 'warehouse'], { db: url }),
    await runScript('keys', ['list'], { db: url }),
    await runScript('track', ['1', '--quantity', '5'], { db: url }),
    await runScript('verify-log', [], { db: url }),
  ];
  for (const r of results) {
    assert.is(r.status, 0, `${r.what}: ${r.stderr}`);
    assert.not.ok((r.stdout + r.stderr).includes(password), `${r.what} shows the password`);
  }
});

service.run();
