// A limit for npm run bench: a bare node:http server doing group commit on SQLite. The
// PATCHes that arrive in one turn of the event loop are written in one transaction (WAL,
// synchronous=FULL, as the service's database is opened), each as two statements: the
// hash-chained event appended, the projection row upserted. The chain tip is read once
// per batch and each pet's version is held in memory (this server is the only writer);
// all are answered once the transaction has committed. No routing, auth or validation
// beyond reading the body.
//
// GET /v1/events opens a Server-Sent Events stream that gets every batch's events once
// it has committed, as the service's change feed sends them (sseMessage), one write per
// stream per batch: the floor of what following the log costs, the bytes themselves.
// The messages carry a request id of a UUID's length (the rows here store "bench"), so
// that each is as long as the service's.
//   bare-group-commit.ts PORT DB_FILE
import type { ServerResponse } from 'node:http';
import { sseMessage } from '../../src/feed/event-json.ts';
import type { ChainRow } from '../../src/store/event-log.ts';
import { openDatabase } from '../../src/store/sqlite/database.ts';
import { eventHash, GENESIS_HASH } from '../../src/store/hash-chain.ts';
import { answer, eventRow, servePatches } from './bare-http.ts';

const [port, path] = process.argv.slice(2);
const db = openDatabase(path!);
const tip = db.prepare('SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1');
const versions = new Map<number, number>(
  (db.prepare('SELECT pet_id, version FROM inventory').raw().all() as [number, number][]).map(([pet, v]) => [Number(pet), v]),
);
const insert = db.prepare(
  `INSERT INTO events (seq, pet_id, version, type, data, actor, request_id, recorded_at, prev_hash, hash)
   VALUES (@seq, @petId, @version, 'QuantitySet', @data, 'bench', 'bench', @recordedAt, @prevHash, @hash)`,
);
const upsert = db.prepare(
  `INSERT INTO inventory (pet_id, quantity, status, version, updated_at) VALUES (?, ?, 'available', ?, ?)
   ON CONFLICT (pet_id) DO UPDATE SET quantity = excluded.quantity, version = excluded.version, updated_at = excluded.updated_at`,
);

interface Patch {
  petId: number;
  quantity: number;
  res: ServerResponse;
  version?: number;
}
let batch: Patch[] = [];
const streams = new Set<ServerResponse>();
const REQUEST_ID = '00000000-0000-4000-8000-000000000000';

const write = db.transaction((patches: Patch[], messages: string[]) => {
  const last = tip.get() as { seq: number; hash: string } | undefined;
  let seq = last?.seq ?? 0;
  let prevHash = last?.hash ?? GENESIS_HASH;
  for (const p of patches) {
    const row = eventRow(++seq, p.petId, (versions.get(p.petId) ?? 0) + 1, p.quantity, prevHash);
    prevHash = eventHash(row);
    insert.run({ ...row, hash: prevHash });
    if (streams.size > 0) {
      const { seq: s, petId, version, type, data, actor, recordedAt, prevHash: prev } = row;
      const chained: ChainRow = [BigInt(s), BigInt(petId), BigInt(version), type, data, actor, REQUEST_ID, recordedAt, prev, prevHash];
      messages.push(sseMessage(chained));
    }
    upsert.run(p.petId, p.quantity, row.version, row.recordedAt);
    versions.set(p.petId, row.version);
    p.version = row.version;
  }
});

function flush(): void {
  const patches = batch;
  batch = [];
  const messages: string[] = [];
  try {
    write(patches, messages);
  } catch (error) {
    // Memory no longer agrees with the database: answer and stop.
    for (const p of patches) p.res.writeHead(503).end();
    throw error;
  }
  for (const p of patches) answer(p.res, p.petId, p.quantity, p.version!);
  if (messages.length > 0) {
    const bytes = Buffer.from(messages.join(''));
    for (const res of streams) res.write(bytes);
  }
}

servePatches(
  port!,
  (pet, quantity, res) => {
    if (batch.push({ petId: Number(pet), quantity, res }) === 1) setImmediate(flush);
  },
  {
    '/v1/events': (_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-store' });
      res.write('retry: 1000\n\n');
      streams.add(res);
      res.on('close', () => streams.delete(res));
    },
  },
);
