// A limit for npm run bench on PostgreSQL: a bare node:http server doing group commit on
// the service's own schema. The PATCHes that arrive while a batch is being written wait
// for the next one; each batch is one transaction on one connection: the chain-head row
// locked once, one multi-row INSERT of the hash-chained events, one multi-row upsert of
// the projection (a pet's last row in the batch), the head moved, COMMIT (synced: fsync
// is on); then all are answered. Each pet's version is held in memory (this server is
// the only writer). No routing, auth or validation beyond reading the body.
//   bare-group-commit-postgres.ts PORT URL
import type { ServerResponse } from 'node:http';
import pg from 'pg';
import { eventHash } from '../../src/store/hash-chain.ts';
import { answer, eventRow, servePatches } from './bare-http.ts';

const [port, url] = process.argv.slice(2);
pg.types.setTypeParser(pg.types.builtins.INT8, (v: string) => BigInt(v));
const client = new pg.Client({ connectionString: url });
await client.connect();
const versions = new Map<bigint, number>(
  (await client.query<{ pet_id: bigint; version: number }>('SELECT pet_id, version FROM inventory')).rows.map((r) => [r.pet_id, r.version]),
);

interface Patch {
  petId: bigint;
  quantity: number;
  res: ServerResponse;
  version?: number;
  recordedAt?: string;
}
let waiting: Patch[] = [];
let writing = false;

/** A VALUES list of rows rows of width parameters each; row() writes one, n(column) naming its parameters. */
const values = (rows: number, width: number, row: (n: (column: number) => string) => string) =>
  Array.from({ length: rows }, (_, r) => row((column) => `$${r * width + column}`)).join(', ');

async function write(patches: Patch[]): Promise<void> {
  await client.query('BEGIN');
  try {
    const head = (await client.query<{ seq: bigint; hash: string }>('SELECT seq, hash FROM chain_head FOR UPDATE')).rows[0]!;
    let seq = head.seq;
    let prevHash = head.hash;
    const events: unknown[] = [];
    const latest = new Map<bigint, Patch>();
    for (const p of patches) {
      const row = eventRow(++seq, p.petId, (versions.get(p.petId) ?? 0) + 1, p.quantity, prevHash);
      const hash = eventHash(row);
      events.push(row.seq, p.petId, row.version, row.type, row.data, row.actor, row.requestId, row.recordedAt, prevHash, hash);
      p.recordedAt = row.recordedAt;
      prevHash = hash;
      versions.set(p.petId, row.version);
      p.version = row.version;
      latest.set(p.petId, p);
    }
    await client.query(
      `INSERT INTO events (seq, pet_id, version, type, data, actor, request_id, recorded_at, prev_hash, hash)
       VALUES ${values(patches.length, 10, (n) => `(${[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map(n).join(', ')})`)}`,
      events,
    );
    await client.query(
      `INSERT INTO inventory (pet_id, quantity, status, version, updated_at) VALUES ${values(latest.size, 4, (n) => `(${n(1)}, ${n(2)}, 'available', ${n(3)}, ${n(4)})`)}
       ON CONFLICT (pet_id) DO UPDATE SET quantity = excluded.quantity, version = excluded.version, updated_at = excluded.updated_at`,
      [...latest.values()].flatMap((p) => [p.petId, p.quantity, p.version, p.recordedAt]),
    );
    await client.query('UPDATE chain_head SET seq = $1, hash = $2, changes = changes + 1', [seq, prevHash]);
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK');
    throw error;
  }
}

function flush(): void {
  if (writing || waiting.length === 0) return;
  const patches = waiting;
  waiting = [];
  writing = true;
  write(patches).then(
    () => {
      for (const p of patches) answer(p.res, p.petId, p.quantity, p.version!);
      writing = false;
      flush();
    },
    (error: unknown) => {
      // Memory no longer agrees with the database: answer, and stop (an unhandled rejection).
      for (const p of patches) p.res.writeHead(503).end();
      throw error;
    },
  );
}

servePatches(port!, (pet, quantity, res) => {
  if (waiting.push({ petId: BigInt(pet), quantity, res }) === 1) setImmediate(flush);
});
