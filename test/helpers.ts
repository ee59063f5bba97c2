// Test helpers: a fresh app on an in-memory database with a key, and a raw HTTP client
// (node:http, so that bodies, headers and big numbers arrive exactly as sent).
import { request as httpRequest, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { suite } from 'uvu';
import { buildApp } from '../src/app.ts';
import { createHttpServer, type ServerLimits } from '../src/http/node-server.ts';
import { makeCommandHandler } from '../src/commands.ts';
import type { PetStatus } from '../src/domain/events.ts';
import { createLogger } from '../src/logger.ts';
import { openDatabase, type Db } from '../src/store/database.ts';
import type { KeyStore } from '../src/store/keys.ts';
import type { InventoryStore } from '../src/store/port.ts';
import { sqliteStoreOn } from '../src/store/sqlite/store.ts';

export interface Response {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  /** The body parsed as JSON, read as the shape T the test expects (res.json<ErrorBody>()). */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the default keeps untyped callers (tests being rewritten elsewhere) compiling; typed callers name T
  json: <T = any>() => T;
}

/** JSON text read as the shape T the test expects. */
export function parseJson<T>(text: string): T {
  return JSON.parse(text) as T;
}

/** One access-log line (pino JSON), the fields tests read. */
export interface AccessLogLine {
  requestId?: string;
  actor?: string;
  method?: string;
  path?: string;
  status?: number | null;
  durationMs?: number;
  time: string;
  aborted?: boolean;
}

/** The Error shape every failure answers with. */
export interface ErrorBody {
  code: string;
  message: string;
  status: number;
}

/** One inventory item as GET and PATCH render it. */
export interface ItemBody {
  petId: number;
  quantity: number;
  status: string;
}

export interface RequestOptions {
  method?: string;
  path: string;
  headers?: Record<string, string | number>;
  body?: string | Buffer;
  /** Send the body in chunks without Content-Length (Transfer-Encoding: chunked). */
  chunked?: boolean;
}

export function send(port: number, options: RequestOptions): Promise<Response> {
  return new Promise((resolve, reject) => {
    // Frame every body explicitly: Node sends a DELETE body unframed otherwise.
    const framing: Record<string, string | number> =
      options.body === undefined
        ? {}
        : options.chunked
          ? { 'Transfer-Encoding': 'chunked' }
          : { 'Content-Length': Buffer.byteLength(options.body) };
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        method: options.method ?? 'GET',
        path: options.path,
        headers: { ...framing, ...options.headers },
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({ status: res.statusCode!, headers: res.headers, text, json: <T>() => JSON.parse(text) as T });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    if (options.body !== undefined) {
      if (options.chunked) {
        const body = Buffer.from(options.body);
        for (let i = 0; i < body.length; i += 1000) req.write(body.subarray(i, i + 1000));
      } else {
        req.write(options.body);
      }
    }
    req.end();
  });
}

/** A command handler over db's store, writes in place (the operator commands' way). */
export function commandsOn(db: Db, now: () => number = Date.now) {
  return makeCommandHandler({ store: sqliteStoreOn(db, { now }), now });
}

export interface TestApp {
  /** The store's one connection: tests look into the tables through it. */
  db: Db;
  store: InventoryStore;
  keys: KeyStore;
  /** An active key named "tester". */
  key: string;
  logs: string[];
  server: Server;
  port: number;
  accepting: boolean;
  /** Moves the injected clock forward. */
  tick(ms?: number): void;
  request(options: RequestOptions): Promise<Response>;
  /** A PATCH with the tester's key and a JSON body. */
  patch(petId: string | bigint | number, body: unknown, headers?: Record<string, string>): Promise<Response>;
  get(path?: string, headers?: Record<string, string>): Promise<Response>;
  track(petId: bigint | number, quantity?: number, status?: PetStatus): Promise<void>;
  events(): Record<string, unknown>[];
  close(): Promise<void>;
}

export interface AppOptions {
  /** Origins allowed by CORS (CORS_ORIGINS); none unless given. */
  corsOrigins?: readonly string[];
}

export async function startApp(path = ':memory:', limits?: ServerLimits, options: AppOptions = {}): Promise<TestApp> {
  const db = openDatabase(path);
  let clock = Date.parse('2026-01-02T03:04:05.678Z');
  const now = () => clock;
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      logs.push(String(chunk));
      done();
    },
  });
  const logger = createLogger('info', sink);
  const state = { accepting: true };
  // Writes in place on the test's connection, so that a test can reach into it (a full
  // disk via max_page_count, a read-only file via query_only); the service's writer
  // thread runs the same writer functions (src/store/sqlite/writer.ts).
  const store = sqliteStoreOn(db, { now });
  const app = buildApp({ store, logger, now, accepting: () => state.accepting, corsOrigins: options.corsOrigins ?? [] });
  const keys = store.keys;
  const key = await keys.create('tester', 'test');
  const server: Server = createHttpServer(app, limits, logger);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const commands = makeCommandHandler({ store, now });
  const auth = { Authorization: `Bearer ${key}` };

  const t: TestApp = {
    db,
    store,
    keys,
    key,
    logs,
    server,
    port,
    get accepting() {
      return state.accepting;
    },
    set accepting(value: boolean) {
      state.accepting = value;
    },
    tick(ms = 1) {
      clock += ms;
    },
    request: (options) => send(port, options),
    patch: (petId, body, headers = {}) =>
      send(port, {
        method: 'PATCH',
        path: `/v1/inventory/${petId}`,
        headers: { ...auth, 'Content-Type': 'application/json', ...headers },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      }),
    get: (path = '/v1/inventory', headers = {}) => send(port, { path, headers: { ...auth, ...headers } }),
    async track(petId, quantity = 0, status = 'available') {
      await commands.handle({ type: 'TrackPet', petId: BigInt(petId), quantity, status }, { actor: 'cli:test', requestId: 'track' });
    },
    events: () => db.prepare('SELECT * FROM events ORDER BY seq').safeIntegers(true).all() as Record<string, unknown>[],
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => {
          db.close();
          resolve();
        });
        server.closeAllConnections();
      }),
  };
  return t;
}

/**
 * A uvu suite whose every test gets a fresh app (ctx.t), seeded by `given`, and whose
 * `then` check runs after each test, before the app closes.
 */
export function appSuite(
  name: string,
  hooks: { given?: (t: TestApp) => Promise<void>; then?: (t: TestApp) => void | Promise<void>; app?: AppOptions } = {},
) {
  const s = suite<{ t: TestApp }>(name);
  s.before.each(async (ctx) => {
    ctx.t = await startApp(':memory:', undefined, hooks.app);
    await hooks.given?.(ctx.t);
  });
  s.after.each(async (ctx) => {
    try {
      await hooks.then?.(ctx.t);
    } finally {
      await ctx.t.close();
    }
  });
  return s;
}
