// End-to-end tests of the service process: started the way `npm start` does
// (node --import tsx src/server.ts) on a fresh SQLite file, driven over HTTP and with the
// real operator scripts while it runs, and stopped with SIGTERM.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { send, type RequestOptions, type Response } from './helpers.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const WAIT_MS = 15_000;
const BOOTSTRAP_START = 'This database had no API key';
const BOOTSTRAP_END = 'Revoke this one: scripts/keys revoke bootstrap.';

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

interface Service {
  proc: ChildProcess;
  port: number;
  out: () => string;
  err: () => string;
  /** The key of the bootstrap message, when this start printed one. */
  bootstrapKey?: string;
  /** Resolves with the exit code (or signal) once the process is gone and its pipes are closed. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  request(options: RequestOptions): Promise<Response>;
  get(path: string, key?: string): Promise<Response>;
  /** SIGTERM, then waits for the exit. */
  stop(): Promise<{ code: number | null; signal: NodeJS.Signals | null; ms: number }>;
}

const running = new Set<ChildProcess>();

function spawnService(env: Record<string, string>): {
  proc: ChildProcess;
  out: () => string;
  err: () => string;
  exited: Service['exited'];
  onData: (listener: () => void) => void;
} {
  const proc = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
    cwd: root,
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(proc);
  let out = '';
  let err = '';
  const listeners = new Set<() => void>();
  const notify = () => listeners.forEach((l) => l());
  proc.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    out += chunk;
    notify();
  });
  proc.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
    err += chunk;
    notify();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    proc.on('close', (code, signal) => {
      running.delete(proc);
      resolve({ code, signal });
      notify();
    });
  });
  return { proc, out: () => out, err: () => err, exited, onData: (l) => listeners.add(l) };
}

/** Waits until check() returns a value, the process exits, or the time is up. */
function waitFor<T>(
  s: { proc: ChildProcess; out: () => string; err: () => string; onData: (l: () => void) => void },
  check: () => T | undefined,
  what: string,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let done = false;
    const finish = (f: () => void) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      f();
    };
    const timer = setTimeout(
      () => finish(() => reject(new Error(`timed out waiting for ${what}\nstdout: ${s.out()}\nstderr: ${s.err()}`))),
      WAIT_MS,
    );
    const poll = () => {
      const value = check();
      if (value !== undefined) finish(() => resolve(value));
      else if (s.proc.exitCode !== null || s.proc.signalCode !== null) {
        finish(() => reject(new Error(`the service exited while waiting for ${what}\nstdout: ${s.out()}\nstderr: ${s.err()}`)));
      }
    };
    s.onData(poll);
    poll();
  });
}

function listeningPort(out: string): number | undefined {
  for (const line of out.split('\n')) {
    if (!line.startsWith('{')) continue;
    const entry = JSON.parse(line) as { msg?: string; url?: string };
    if (entry.msg === 'listening' && entry.url) return Number(new URL(entry.url).port);
  }
  return undefined;
}

/** Starts the service on db and waits until it listens (and, if expected, for the bootstrap message). */
async function startService(db: string, options: { expectKey: boolean; env?: Record<string, string> }): Promise<Service> {
  const s = spawnService({ INVENTORY_DB: db, ...options.env });
  const port = await waitFor(s, () => listeningPort(s.out()), 'the "listening" log line');
  let bootstrapKey: string | undefined;
  if (options.expectKey) {
    const [key, curlPort] = await waitFor(
      s,
      () => {
        const m = /curl -H "Authorization: Bearer (pinv_[A-Za-z0-9]{32})" http:\/\/127\.0\.0\.1:(\d+)\/v1\/inventory\n/.exec(s.err());
        return m ? [m[1]!, Number(m[2])] : undefined;
      },
      'the bootstrap message with its curl line',
    );
    assert.is(curlPort, port, 'the curl line names the port the service listens on');
    bootstrapKey = key;
  }
  const request = (o: RequestOptions) => withTimeout(send(port, o), WAIT_MS, `${o.method ?? 'GET'} ${o.path}`);
  return {
    proc: s.proc,
    port,
    out: s.out,
    err: s.err,
    bootstrapKey,
    exited: s.exited,
    request,
    get: (path, key) => request({ path, headers: key ? { Authorization: `Bearer ${key}` } : {} }),
    async stop() {
      const started = Date.now();
      s.proc.kill('SIGTERM');
      const result = await withTimeout(s.exited, WAIT_MS, 'the service to exit after SIGTERM');
      return { ...result, ms: Date.now() - started };
    },
  };
}

/** Kills whatever a test left running, and waits for it to be gone. */
async function killAll(): Promise<void> {
  await Promise.all(
    [...running].map(
      (proc) =>
        new Promise<void>((resolve) => {
          if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
          proc.once('close', () => resolve());
          proc.kill('SIGKILL');
          setTimeout(resolve, 5_000).unref();
        }),
    ),
  );
}

function script(name: string, args: string[]): { status: number | null; stdout: string; stderr: string } {
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.INVENTORY_DB;
  const r = spawnSync(join(root, 'scripts', name), args, { cwd: root, env, encoding: 'utf8', timeout: 30_000 });
  if (r.error) throw r.error;
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

function apiKeys(db: string): { name: string; created_by: string; revoked_at: string | null }[] {
  const conn = new Database(db, { readonly: true, fileMustExist: true });
  try {
    return conn.prepare('SELECT name, created_by, revoked_at FROM api_keys ORDER BY name').all() as {
      name: string;
      created_by: string;
      revoked_at: string | null;
    }[];
  } finally {
    conn.close();
  }
}

/** Standard error without the one-time bootstrap message. */
function stderrBesidesBootstrap(err: string): string {
  const start = err.indexOf(BOOTSTRAP_START);
  if (start < 0) return err;
  const end = err.indexOf(BOOTSTRAP_END, start);
  assert.ok(end > start, `the bootstrap message is complete:\n${err}`);
  return err.slice(0, start) + err.slice(end + BOOTSTRAP_END.length);
}

/** No key, no Authorization header, no bearer credential in the logs of a service. */
function assertNoSecrets(s: Pick<Service, 'out' | 'err'>, keys: string[]): void {
  const out = s.out();
  const err = stderrBesidesBootstrap(s.err());
  for (const [name, text] of [
    ['stdout', out],
    ['stderr', err],
  ] as const) {
    for (const key of keys) assert.not.ok(text.includes(key), `${name} holds a key`);
    assert.not.ok(text.includes('Authorization'), `${name} mentions Authorization`);
    assert.not.ok(text.includes('Bearer pinv_'), `${name} holds a bearer credential`);
    assert.not.ok(/pinv_[A-Za-z0-9]/.test(text), `${name} holds something like a key`);
  }
}

function countOf(text: string, part: string): number {
  return text.split(part).length - 1;
}

interface Ctx {
  dir: string;
  db: string;
}

const server = suite<Ctx>('server process', { dir: '', db: '' });

server.before.each((ctx) => {
  ctx.dir = mkdtempSync(join(tmpdir(), 'inventory-server-'));
  ctx.db = join(ctx.dir, 'inventory.db');
});

server.after.each(async (ctx) => {
  await killAll();
  rmSync(ctx.dir, { recursive: true, force: true });
});

server('first start creates and prints a "bootstrap" key once; it works; a second start prints none', async (ctx) => {
  const first = await startService(ctx.db, { expectKey: true });
  const key = first.bootstrapKey!;
  try {
    const err = first.err();
    assert.is(countOf(err, BOOTSTRAP_START), 1, 'one bootstrap message');
    assert.match(err, /named "bootstrap"/);
    assert.match(err, new RegExp(`^    ${key}$`, 'm'), 'the key stands alone on a line, easy to copy');
    assert.equal(apiKeys(ctx.db), [{ name: 'bootstrap', created_by: 'service:first-start', revoked_at: null }]);

    const res = await first.get('/v1/inventory', key);
    assert.is(res.status, 200, res.text);
    assert.equal(res.json(), []);
    const stopped = await first.stop();
    assert.is(stopped.code, 0);
    assert.is(countOf(first.err(), key), 2, 'the key is printed in the message and its curl line only');
    assertNoSecrets(first, [key]);
  } finally {
    await killAll();
  }

  const second = await startService(ctx.db, { expectKey: false });
  try {
    const res = await second.get('/v1/inventory', key);
    assert.is(res.status, 200, 'the bootstrap key still works');
    const stopped = await second.stop();
    assert.is(stopped.code, 0);
    assert.not.match(second.err(), /pinv_/);
    assert.not.ok(second.err().includes(BOOTSTRAP_START), 'no bootstrap message on a second start');
    assert.is(apiKeys(ctx.db).length, 1, 'no new key');
    assertNoSecrets(second, [key]);
  } finally {
    await killAll();
  }
});

server('revoking from the CLI stops a key at once; a database with only revoked keys gets none', async (ctx) => {
  const first = await startService(ctx.db, { expectKey: true });
  const key = first.bootstrapKey!;
  try {
    assert.is((await first.get('/v1/inventory', key)).status, 200);
    const revoked = script('keys', ['revoke', 'bootstrap', '--db', ctx.db]);
    assert.is(revoked.status, 0, revoked.stderr);
    const res = await first.get('/v1/inventory', key);
    assert.is(res.status, 401, 'the revoked key is refused by the running service');
    assert.equal(res.json(), { code: res.json().code, message: res.json().message, status: 401 });
    assert.match(String(res.headers['www-authenticate']), /error="invalid_token"/);
    assert.is((await first.stop()).code, 0);
    assertNoSecrets(first, [key]);
  } finally {
    await killAll();
  }

  const second = await startService(ctx.db, { expectKey: false });
  try {
    // A request round trip: anything printed at start has arrived by now.
    assert.is((await second.get('/v1/inventory', key)).status, 401);
    assert.is((await second.get('/readyz')).status, 200);
    assert.not.match(second.err(), /pinv_/, 'no new key printed');
    const keys = apiKeys(ctx.db);
    assert.is(keys.length, 1, 'no new key created');
    assert.is(keys[0]!.name, 'bootstrap');
    assert.ok(keys[0]!.revoked_at, 'still revoked');
    assert.is((await second.stop()).code, 0);
    assert.not.match(second.err(), /pinv_/);
    assertNoSecrets(second, [key]);
  } finally {
    await killAll();
  }
});

server('a key created and a pet tracked with the scripts while the service runs are live at once', async (ctx) => {
  const s = await startService(ctx.db, { expectKey: true });
  const bootstrapKey = s.bootstrapKey!;
  try {
    const created = script('keys', ['create', 'shop-front', '--db', ctx.db]);
    assert.is(created.status, 0, created.stderr);
    const key = created.stdout.trim();
    let res = await s.get('/v1/inventory', key);
    assert.is(res.status, 200, res.text);
    assert.equal(res.json(), []);

    const tracked = script('track', ['9007199254740993', '--quantity', '3', '--status', 'pending', '--db', ctx.db]);
    assert.is(tracked.status, 0, tracked.stderr);
    res = await s.get('/v1/inventory', key);
    assert.is(res.status, 200);
    // Raw text: a bare JSON number, exact (JSON.parse would round it).
    assert.is(res.text.replace(/\s/g, ''), '[{"petId":9007199254740993,"quantity":3,"status":"pending"}]');

    // The new key is the actor of what it changes.
    res = await s.request({
      method: 'PATCH',
      path: '/v1/inventory/9007199254740993',
      headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
      body: '{"quantity": 4}',
    });
    assert.is(res.status, 200, res.text);
    const conn = new Database(ctx.db, { readonly: true });
    try {
      const last = conn.prepare('SELECT pet_id, type, actor FROM events ORDER BY seq DESC LIMIT 1').safeIntegers(true).get();
      assert.equal(last, { pet_id: 9007199254740993n, type: 'QuantitySet', actor: 'shop-front' });
    } finally {
      conn.close();
    }

    assert.is((await s.stop()).code, 0);
    assertNoSecrets(s, [bootstrapKey, key]);
  } finally {
    await killAll();
  }
});

server('SIGTERM: /healthz and /readyz answer 200 before; the process exits 0 within seconds', async (ctx) => {
  const s = await startService(ctx.db, { expectKey: true });
  try {
    assert.is((await s.get('/healthz')).status, 200);
    const ready = await s.get('/readyz');
    assert.is(ready.status, 200, ready.text);
    const stopped = await s.stop();
    assert.is(stopped.code, 0, `exit code ${stopped.code}, signal ${stopped.signal}`);
    assert.ok(stopped.ms < 5_000, `took ${stopped.ms} ms`);
    assert.match(s.out(), /"msg":"shutting down"/);
    assert.match(s.out(), /"msg":"stopped"/);
    assertNoSecrets(s, [s.bootstrapKey!]);
  } finally {
    await killAll();
  }
});

server('invalid configuration exits 2 and names the variable on stderr', async (ctx) => {
  const cases: [Record<string, string>, RegExp][] = [
    [{ PORT: 'abc' }, /PORT must be .*"abc"/],
    [{ LOG_LEVEL: 'loud' }, /LOG_LEVEL must be one of .*"loud"/],
  ];
  try {
    for (const [env, message] of cases) {
      const s = spawnService({ INVENTORY_DB: ctx.db, ...env });
      const { code } = await withTimeout(s.exited, WAIT_MS, `the service to exit with ${JSON.stringify(env)}`);
      assert.is(code, 2, `${JSON.stringify(env)}: exit ${code}\nstderr: ${s.err()}`);
      assert.match(s.err(), message);
      assert.not.match(s.err(), /\n\s+at /, 'no stack trace');
      assert.is(s.out(), '', 'nothing logged');
      assert.not.ok(existsSync(ctx.db), 'no database opened');
    }
  } finally {
    await killAll();
  }
});

server('no key, Authorization header or bearer credential ever reaches the logs', async (ctx) => {
  // trace: the most talkative level, so that nothing is hidden by the level.
  const s = await startService(ctx.db, { expectKey: true, env: { LOG_LEVEL: 'trace' } });
  const key = s.bootstrapKey!;
  const unknown = `pinv_${'A'.repeat(32)}`;
  try {
    const revocable = script('keys', ['create', 'temp', '--db', ctx.db]);
    assert.is(revocable.status, 0, revocable.stderr);
    const temp = revocable.stdout.trim();
    assert.is(script('keys', ['revoke', 'temp', '--db', ctx.db]).status, 0);

    const json = { 'Content-Type': 'application/json' };
    const requests: [RequestOptions, number][] = [
      [{ path: '/v1/inventory', headers: { Authorization: `Bearer ${key}` } }, 200],
      [{ path: '/v1/inventory', headers: { Authorization: `bearer ${key}` } }, 200],
      [{ path: '/v1/inventory', headers: { Authorization: `Bearer ${unknown}` } }, 401],
      [{ path: '/v1/inventory', headers: { Authorization: `Bearer ${temp}` } }, 401],
      [{ path: '/v1/inventory', headers: { Authorization: `Bearer ${key} extra` } }, 401],
      [{ path: '/v1/inventory', headers: { Authorization: `Basic ${Buffer.from(`u:${key}`).toString('base64')}` } }, 401],
      [{ path: '/v1/nowhere', headers: { Authorization: `Bearer ${key}` } }, 404],
      [{ method: 'PATCH', path: '/v1/inventory/1', headers: { Authorization: `Bearer ${key}`, ...json }, body: '{"quantity":1}' }, 404],
      // A key-like value in a body is the client's own data (the answer may quote it); it must not reach the log.
      [{ method: 'PATCH', path: '/v1/inventory/1', headers: { Authorization: `Bearer ${key}`, ...json }, body: `{"quantity":"${unknown}"}` }, 400],
      [{ method: 'PATCH', path: '/v1/inventory/1', headers: { Authorization: `Bearer ${key}`, ...json }, body: '{' }, 400],
    ];
    for (const [options, status] of requests) {
      const res = await s.request(options);
      assert.is(res.status, status, `${options.method ?? 'GET'} ${options.path}: ${res.text}`);
      for (const k of [key, temp]) assert.not.ok(res.text.includes(k), 'a key in a response body');
    }
    assert.is((await s.stop()).code, 0);
    assert.ok(countOf(s.out(), '"status":') >= requests.length, 'every request was logged');
    assertNoSecrets(s, [key, unknown, temp]);
  } finally {
    await killAll();
  }
});

server.after(async () => {
  await killAll();
});

server.run();
