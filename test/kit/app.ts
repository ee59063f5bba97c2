// The service's HTTP app in this process, on a fresh database of a store target: a key
// named "tester", an injected clock, the log lines kept for the test to read, and the
// port's store to look into. Writes run inline by default (faults reach the store's own
// connection); writer 'thread' runs them as the service does.
import { EventEmitter, once } from 'node:events';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { buildApp } from '../../src/app.ts';
import { makeCommandHandler } from '../../src/application/write/commands.ts';
import type { PetStatus } from '../../src/domain/events.ts';
import { makeFeed, type Feed } from '../../src/http/routes/feed-hub.ts';
import type { FeedLimits } from '../../src/feed/limits.ts';
import { createHttpServer, type ServerLimits } from '../../src/http/server/node-server.ts';
import type { GuardTiming } from '../../src/http/server/stall-guard.ts';
import { createLogger } from '../../src/support/logger.ts';
import type { KeyStore } from '../../src/store/keys.ts';
import type { InventoryStore } from '../../src/store/port.ts';
import { createKey, eventsOf, type EventRow } from './fixtures.ts';
import { send, type RequestOptions, type Response } from './http.ts';
import { defaultTarget, openStore, type StoreFaults, type StoreTarget } from './stores.ts';
import { makeSigner, type SigningKeyData } from '../../src/support/signing.ts';

export interface TestApp {
  target: StoreTarget;
  /** The database (--db): a file path for SQLite, a URL for PostgreSQL. */
  db: string;
  store: InventoryStore;
  keys: KeyStore;
  /** An active key named "tester". */
  key: string;
  logs: string[];
  /** Resolves at the next log line. */
  nextLog(): Promise<void>;
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
  /** The log, by seq, read through the port. */
  events(): Promise<EventRow[]>;
  /** The store's faults (inline writer only). */
  faults(): StoreFaults;
  /** The app's change feed. */
  feed: Feed;
  close(): Promise<void>;
}

export interface AppOptions {
  /** The store; the first of storeTargets() unless given. */
  target?: StoreTarget;
  limits?: ServerLimits;
  /** Origins allowed by CORS (CORS_ORIGINS); none unless given. */
  corsOrigins?: readonly string[];
  writer?: 'inline' | 'thread';
  /** Opens the store instead of target.open (a test that keeps a handle on the writer thread). */
  open?: (db: string, now: () => number) => Promise<InventoryStore>;
  /** The change feed's limits, where a test needs others. */
  feed?: Partial<FeedLimits>;
  /** IDEMPOTENCY_TTL_HOURS, in ms; the service's default unless given. */
  idempotencyTtlMs?: number;
  /** Signs as the service does: the store enters the key in the key log and signs
   * receipts, the app signs heads. Unsigned unless given. */
  signingKey?: SigningKeyData;
  /** The tester key's name: another instance on the same database needs another. */
  keyName?: string;
  /** The real clock instead of the injected one (tick then does nothing). */
  realClock?: boolean;
  /** MAX_REQUESTS_PER_KEY; the service's default unless given. */
  maxRequestsPerKey?: number;
  /** The stall guard's clock and check timer; the real ones unless given. */
  stallTiming?: GuardTiming;
}

export async function startApp(options: AppOptions = {}): Promise<TestApp> {
  const target = options.target ?? defaultTarget();
  const fresh = await target.fresh();
  let clock = Date.parse('2026-01-02T03:04:05.678Z');
  const now = options.realClock ? Date.now : () => clock;
  const logs: string[] = [];
  const lines = new EventEmitter();
  const sink = new Writable({
    write(chunk, _encoding, done) {
      logs.push(String(chunk));
      lines.emit('line');
      done();
    },
  });
  const logger = createLogger('info', sink);
  const state = { accepting: true };
  const { signingKey } = options;
  const open = options.open ?? (signingKey && ((db: string) => openStore(db, { now, writer: options.writer, signingKey })));
  const store = await (open ? open(fresh.db, now) : target.open(fresh.db, { now, writer: options.writer }));
  const feed = makeFeed({ store, logger, limits: options.feed });
  const app = buildApp({
    store,
    logger,
    now,
    accepting: () => state.accepting,
    corsOrigins: options.corsOrigins ?? [],
    idempotencyTtlMs: options.idempotencyTtlMs,
    ...(options.maxRequestsPerKey === undefined ? {} : { maxRequestsPerKey: options.maxRequestsPerKey }),
    feed,
    ...(signingKey ? { signer: makeSigner(signingKey) } : {}),
  });
  const key = await createKey(store, options.keyName);
  const server: Server = createHttpServer(app, options.limits, logger, options.stallTiming);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const commands = makeCommandHandler({ store, now });
  const auth = { Authorization: `Bearer ${key}` };

  return {
    target,
    db: fresh.db,
    store,
    keys: store.keys,
    key,
    logs,
    nextLog: () => once(lines, 'line').then(() => undefined),
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
    request: (o) => send(port, o),
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
    events: () => eventsOf(store),
    faults: () => target.faults(store),
    feed,
    async close() {
      await feed.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await store.close();
      await fresh.cleanup();
    },
  };
}
