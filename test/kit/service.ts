// A service process for end-to-end tests: started the way `npm start` does (node
// dist/server.mjs, built from the source when it is newer: kit/bundle.ts) on a given
// database (INVENTORY_DB), on a free port, and always killed afterwards (killAll), with
// every wait bounded.
import { spawn, type ChildProcess } from 'node:child_process';
import * as assert from 'uvu/assert';
import { serverBundle } from './bundle.ts';
import { send, type RequestOptions, type Response } from './http.ts';
import { root } from './paths.ts';

export const WAIT_MS = 15_000;

export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

export interface Service {
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
  /** Sends signal (SIGKILL unless given) without waiting: a crash, or a signal under test. */
  kill(signal?: NodeJS.Signals): void;
  /** SIGTERM, then waits for the exit. */
  stop(): Promise<{ code: number | null; signal: NodeJS.Signals | null; ms: number }>;
  /** Resolves once check() holds, asked again whenever the process writes; rejects when
   * it exits first or after WAIT_MS. */
  shows(check: () => boolean, what: string): Promise<void>;
}

const running = new Set<ChildProcess>();

export function spawnService(
  env: Record<string, string>,
  /** Modules loaded before the server (--import), such as a test's entry in test/kit/. */
  preload: readonly string[] = [],
): {
  proc: ChildProcess;
  out: () => string;
  err: () => string;
  exited: Service['exited'];
  onData: (listener: () => void) => void;
} {
  // A preload hooks the source's own imports (the crash tests' store opener): the source
  // then runs through tsx, as the bundle has no imports left to hook.
  const args =
    preload.length === 0 ? [serverBundle()] : [...['tsx', ...preload].flatMap((module) => ['--import', module]), 'src/server.ts'];
  const proc = spawn(process.execPath, args, {
    cwd: root,
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(proc);
  let out = '';
  let err = '';
  const listeners = new Set<() => void>();
  const notify = () => listeners.forEach((l) => l());
  proc.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    out += chunk;
    notify();
  });
  proc.stderr.setEncoding('utf8').on('data', (chunk: string) => {
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

export interface ServiceOptions {
  /** The database (INVENTORY_DB). */
  db: string;
  /** Whether this start must print the bootstrap key (an empty database). */
  expectKey: boolean;
  env?: Record<string, string>;
  /** Modules loaded before the server (--import). */
  preload?: readonly string[];
}

/** Starts the service on db and waits until it listens (and, if expected, for the bootstrap message). */
export async function startService(options: ServiceOptions): Promise<Service> {
  const s = spawnService({ INVENTORY_DB: options.db, ...options.env }, options.preload);
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
    kill: (signal = 'SIGKILL') => void s.proc.kill(signal),
    shows: (check, what) => waitFor(s, () => (check() ? true : undefined), what).then(() => undefined),
    async stop() {
      const started = Date.now();
      s.proc.kill('SIGTERM');
      const result = await withTimeout(s.exited, WAIT_MS, 'the service to exit after SIGTERM');
      return { ...result, ms: Date.now() - started };
    },
  };
}

/** Kills whatever a test left running, and waits for it to be gone. */
export async function killAll(): Promise<void> {
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
