// A limit for npm run bench on PostgreSQL: a bare node:http server doing one transaction
// per PATCH on the service's own schema, as a service without group commit would. A
// tamper-evident chain needs one writer at a time at its head, so each transaction locks
// the chain-head row first, then inserts the hash-chained event, updates the projection
// and the head, and commits (synced: fsync is on). No routing, auth or validation beyond
// reading the body. The pool holds 10 connections, node-postgres's default: more would
// only queue on the chain-head lock inside the server instead of in the pool.
//   bare-patch-postgres.ts PORT URL
import pg from 'pg';
import { eventHash } from '../../src/store/hash-chain.ts';
import { answer, eventRow, servePatches } from './bare-http.ts';

const [port, url] = process.argv.slice(2);
pg.types.setTypeParser(pg.types.builtins.INT8, (v: string) => BigInt(v));
const pool = new pg.Pool({ connectionString: url, max: 10 });

async function write(petId: bigint, quantity: number): Promise<number> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const head = (await client.query<{ seq: bigint; hash: string }>('SELECT seq, hash FROM chain_head FOR UPDATE')).rows[0]!;
    const current = (await client.query<{ version: number }>('SELECT version FROM inventory WHERE pet_id = $1', [petId])).rows[0];
    const row = eventRow(head.seq + 1n, petId, (current?.version ?? 0) + 1, quantity, head.hash);
    const hash = eventHash(row);
    await client.query(
      `INSERT INTO events (seq, pet_id, version, type, data, actor, request_id, recorded_at, prev_hash, hash)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
      [row.seq, petId, row.version, row.type, row.data, row.actor, row.requestId, row.recordedAt, row.prevHash, hash],
    );
    await client.query(
      `INSERT INTO inventory (pet_id, quantity, status, version, updated_at) VALUES ($1, $2, 'available', $3, $4)
       ON CONFLICT (pet_id) DO UPDATE SET quantity = excluded.quantity, version = excluded.version, updated_at = excluded.updated_at`,
      [petId, quantity, row.version, row.recordedAt],
    );
    await client.query('UPDATE chain_head SET seq = $1, hash = $2, changes = changes + 1', [row.seq, hash]);
    await client.query('COMMIT');
    return row.version;
  } catch (error) {
    await client.query('ROLLBACK');
    throw error;
  } finally {
    client.release();
  }
}

servePatches(port!, (pet, quantity, res) => {
  const petId = BigInt(pet);
  write(petId, quantity).then(
    (version) => answer(res, petId, quantity, version),
    () => res.writeHead(503).end(),
  );
});
