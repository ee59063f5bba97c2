// What the benchmark and the soak run both set up: a database with tracked pets and a
// key, and a free port on 127.0.0.1.
import { createServer } from 'node:net';
import { commandsFor } from '../../src/application/write/commands.ts';
import { openStore } from '../../src/store/open.ts';
import { BENCH_ORIGIN, ready, startService } from './harness.ts';

/** A database (a SQLite path or a PostgreSQL URL) with pets 1..pets tracked and a key named "bench"; returns the key. */
export async function makeDatabase(target: string, pets: number): Promise<string> {
  const store = await openStore(target);
  const key = await store.keys.create('bench', 'bench');
  const commands = commandsFor(store);
  for (let from = 1; from <= pets; from += 10_000) {
    const batch = [];
    for (let id = from; id < from + 10_000 && id <= pets; id++) {
      batch.push({ type: 'TrackPet' as const, petId: BigInt(id), quantity: id % 100, status: 'available' as const });
    }
    await commands.handleAll(batch, { actor: 'cli:bench', requestId: 'bench' });
  }
  await store.close();
  return key;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

/** A service as npm start runs it on a new database at db (a SQLite path or a
 * PostgreSQL URL) with pets 1..pets tracked, CORS on for the bench's origin when asked,
 * and env's settings besides; resolves once /healthz answers. */
export async function serviceOnNewDatabase(db: string, pets: number, cors: boolean, env: Record<string, string> = {}) {
  const key = await makeDatabase(db, pets);
  const port = await freePort();
  const child = startService({
    PORT: String(port),
    HOST: '127.0.0.1',
    INVENTORY_DB: db,
    LOG_LEVEL: 'info',
    ...(cors ? { CORS_ORIGINS: BENCH_ORIGIN } : {}),
    ...env,
  });
  await ready(port, '/healthz');
  return { key, port, child };
}
