// A limit for npm run bench: a bare node:http server doing one durable transaction per
// PATCH, as a service without group commit would: insert the event (hash-chained, as
// ours are) and upsert the projection row, in WAL mode with synchronous=FULL, then
// answer. No routing, auth or validation beyond reading the body.
//   bare-patch.ts PORT DB_FILE
import { openDatabase } from '../../src/store/database.ts';
import { eventHash, GENESIS_HASH } from '../../src/store/hash-chain.ts';
import { answer, eventRow, servePatches } from './bare-http.ts';

const [port, path] = process.argv.slice(2);
const db = openDatabase(path!);
const tip = db.prepare('SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1');
const version = db.prepare('SELECT version FROM inventory WHERE pet_id = ?').pluck();
const insert = db.prepare(
  `INSERT INTO events (seq, pet_id, version, type, data, actor, request_id, recorded_at, prev_hash, hash)
   VALUES (@seq, @petId, @version, 'QuantitySet', @data, 'bench', 'bench', @recordedAt, @prevHash, @hash)`,
);
const upsert = db.prepare(
  `INSERT INTO inventory (pet_id, quantity, status, version, updated_at) VALUES (?, ?, 'available', ?, ?)
   ON CONFLICT (pet_id) DO UPDATE SET quantity = excluded.quantity, version = excluded.version, updated_at = excluded.updated_at`,
);
const write = db.transaction((petId: number, quantity: number) => {
  const last = tip.get() as { seq: number; hash: string } | undefined;
  const row = eventRow(
    (last?.seq ?? 0) + 1,
    petId,
    ((version.get(petId) as number | undefined) ?? 0) + 1,
    quantity,
    last?.hash ?? GENESIS_HASH,
  );
  insert.run({ ...row, hash: eventHash(row) });
  upsert.run(petId, quantity, row.version, row.recordedAt);
  return row.version;
});

servePatches(port!, (pet, quantity, res) => {
  const petId = Number(pet);
  answer(res, petId, quantity, write(petId, quantity));
});
