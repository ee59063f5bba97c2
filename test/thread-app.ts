// The service as it runs in production, in this process: a file database, the writer
// in its worker thread, and the HTTP app on 127.0.0.1, with a key and pet 7 tracked.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { buildApp } from '../src/app.ts';
import { commandsFor } from '../src/commands.ts';
import { createHttpServer } from '../src/http/node-server.ts';
import { createLogger } from '../src/logger.ts';
import type { InventoryStore } from '../src/store/port.ts';
import { openSqliteStore } from '../src/store/sqlite/store.ts';
import { send, type Response } from './helpers.ts';

export interface ThreadApp {
  dir: string;
  path: string;
  store: InventoryStore;
  patch(quantity: number, petId?: number): Promise<Response>;
  get(path: string): Promise<Response>;
  /** Moves the app's clock (readiness probes at most once a second by it). */
  tick(ms: number): void;
  close(): Promise<void>;
}

export async function startThreadApp(prefix: string): Promise<ThreadApp> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const path = join(dir, 'inventory.db');
  let clock = Date.parse('2026-01-02T03:04:05.678Z');
  const store = await openSqliteStore(path, { writer: 'thread' });
  const key = await store.keys.create('tester', 'test');
  await commandsFor(store).handleAll([{ type: 'TrackPet', petId: 7n, quantity: 1, status: 'available' }], {
    actor: 'cli:test',
    requestId: 'seed',
  });
  const sink = new Writable({ write: (_chunk, _encoding, done) => done() });
  const app = buildApp({ store, logger: createLogger('info', sink), now: () => clock });
  const server: Server = createHttpServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    dir,
    path,
    store,
    patch: (quantity, petId = 7) =>
      send(port, {
        method: 'PATCH',
        path: `/v1/inventory/${petId}`,
        headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ quantity }),
      }),
    get: (p) => send(port, { path: p, headers: { Authorization: `Bearer ${key}` } }),
    tick: (ms) => void (clock += ms),
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
