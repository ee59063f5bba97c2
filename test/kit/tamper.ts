// What someone who has the SQLite file can do to its log, with plain SQL and the chain's
// published encoding: the triggers only guard against accidents. Tests and examples use
// these to show what the hash chain and saved digests catch.
import Database from 'better-sqlite3';
import { eventHash, GENESIS_HASH, keyEventHash } from '../../src/store/hash-chain.ts';
import type { KeyChainRow } from '../../src/store/keys.ts';

/** Runs run on a plain read-write connection to the file, as anyone with the file could. */
export function withFile<T>(path: string, run: (db: Database.Database) => T): T {
  const db = new Database(path, { fileMustExist: true });
  try {
    db.pragma('busy_timeout = 5000');
    return run(db);
  } finally {
    db.close();
  }
}

/** Recomputes every prev_hash and hash in seq order, so that the chain is intact again. */
export function recomputeChain(db: Database.Database): void {
  const rows = db
    .prepare('SELECT seq, pet_id, version, type, data, actor, request_id, recorded_at FROM events ORDER BY seq')
    .safeIntegers(true)
    .all() as {
    seq: bigint;
    pet_id: bigint;
    version: bigint;
    type: string;
    data: string;
    actor: string;
    request_id: string;
    recorded_at: string;
  }[];
  const update = db.prepare('UPDATE events SET prev_hash = ?, hash = ? WHERE seq = ?');
  let prev = GENESIS_HASH;
  db.transaction(() => {
    for (const r of rows) {
      const hash = eventHash({
        prevHash: prev,
        seq: r.seq,
        petId: r.pet_id,
        version: r.version,
        type: r.type,
        data: r.data,
        actor: r.actor,
        requestId: r.request_id,
        recordedAt: r.recorded_at,
      });
      update.run(prev, hash, r.seq);
      prev = hash;
    }
  })();
}

/**
 * The SQL that renumbers the key log without gaps and recomputes its chain and counter,
 * as someone hiding a removed key would (the same statements on SQLite and PostgreSQL,
 * but for the counter). rows: the key log as it is, by seq.
 */
export function rewriteKeyChainSql(rows: readonly KeyChainRow[], store: 'sqlite' | 'postgres'): string {
  const statements: string[] = [];
  let prev = GENESIS_HASH;
  rows.forEach(([oldSeq, type, name, keyHash, recordedAt, actor, , , data], i) => {
    const seq = i + 1;
    const hash = keyEventHash({ prevHash: prev, seq, type, name, keyHash, recordedAt, actor, data });
    statements.push(`UPDATE api_key_events SET seq = ${seq}, prev_hash = '${prev}', hash = '${hash}' WHERE seq = ${oldSeq};`);
    prev = hash;
  });
  statements.push(
    store === 'sqlite'
      ? `UPDATE sqlite_sequence SET seq = ${rows.length} WHERE name = 'api_key_events';`
      : `UPDATE key_chain_head SET seq = ${rows.length}, hash = '${prev}';`,
  );
  return statements.join('\n');
}

/** What forges an event of pet 1: its version, actor, time and type (QuantitySet unless
 * told), with the quantity a QuantitySet sets (a StatusSet sets the status "pending"). */
export interface ForgedEvent {
  version: number;
  quantity: number;
  actor: string;
  recordedAt: string;
  type?: 'QuantitySet' | 'StatusSet' | 'PetTracked';
}

function forgedData(f: ForgedEvent): string {
  if (f.type === 'StatusSet') return '{"status":"pending","schemaVersion":1}';
  if (f.type === 'PetTracked') return `{"quantity":${f.quantity},"status":"pending","schemaVersion":1}`;
  return `{"quantity":${f.quantity},"schemaVersion":1}`;
}

/** The INSERT of a forged event of pet 1 at seq, chained after prevHash, with its hash. */
export function forgedEventSql(seq: bigint, prevHash: string, f: ForgedEvent): { sql: string; hash: string } {
  const type = f.type ?? 'QuantitySet';
  const data = forgedData(f);
  const fields = { seq, petId: 1n, version: f.version, type, data, actor: f.actor, requestId: 'forged', recordedAt: f.recordedAt };
  const hash = eventHash({ prevHash, ...fields });
  return {
    hash,
    sql: `INSERT INTO events (seq, pet_id, version, type, data, actor, request_id, recorded_at, prev_hash, hash)
     VALUES (${seq}, 1, ${f.version}, '${type}', '${data}', '${f.actor}', 'forged', '${f.recordedAt}', '${prevHash}', '${hash}')`,
  };
}

/** The UPDATE of pet 1's inventory row to what the forged event makes of it. */
export function forgedProjectionSql(f: ForgedEvent): string {
  const set =
    f.type === 'StatusSet'
      ? "status = 'pending'"
      : f.type === 'PetTracked'
        ? `quantity = ${f.quantity}, status = 'pending'`
        : `quantity = ${f.quantity}`;
  return `UPDATE inventory SET ${set}, version = ${f.version}, updated_at = '${f.recordedAt}' WHERE pet_id = 1`;
}
