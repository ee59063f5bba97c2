// What someone who has the SQLite file can do to its log, with plain SQL and the chain's
// published encoding: the triggers only guard against accidents. Tests and examples use
// these to show what the hash chain and saved digests catch.
import Database from 'better-sqlite3';
import { eventHash, GENESIS_HASH, keyEventHash } from '../../src/store/hash-chain.ts';
import type { KeyChainRow } from '../../src/store/keys.ts';
import { eventLeaf, extendTree } from '../../src/support/merkle.ts';
import type { StoreTarget } from './stores.ts';
import { query } from './sql.ts';
import { endorsedData } from '../../src/store/signing-keys.ts';
import { endorsementText, originOf, signedNote, verifierKey } from '../../src/support/checkpoint.ts';
import { makeSigner, type SigningKeyData } from '../../src/support/signing.ts';

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

/**
 * Rebuilds the Merkle tree (tree_nodes) from the events' hashes as they are now, past the
 * triggers, as a forger who knows the published encoding would after editing the events.
 */
export async function regrowTree(target: Pick<StoreTarget, 'name' | 'tamper'> & { open: StoreTarget['open'] }, db: string): Promise<void> {
  const store = await target.open(db, { readonly: true });
  const leaves: Buffer[] = [];
  try {
    for await (const page of store.chainRows()) for (const row of page) leaves.push(eventLeaf(row[9] ?? ''));
  } finally {
    await store.close();
  }
  const bytes = (b: Buffer) => (target.name === 'sqlite' ? `X'${b.toString('hex')}'` : `decode('${b.toString('hex')}', 'hex')`);
  const rows = extendTree(0, new Map(), leaves).nodes.map((n) => `(${n.level}, ${n.index}, ${bytes(n.hash)})`);
  await target.tamper.pastGuards(
    db,
    ['DELETE FROM tree_nodes', ...(rows.length > 0 ? [`INSERT INTO tree_nodes (level, idx, hash) VALUES ${rows.join(', ')}`] : [])].join(
      ';\n',
    ),
  );
}

/** Recomputes every prev_hash and hash in seq order, and the Merkle tree, so that the chain is intact again. */
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
    const triggers = db
      .prepare("SELECT sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'tree_nodes'")
      .pluck()
      .all() as string[];
    db.exec('DROP TRIGGER IF EXISTS tree_nodes_no_update; DROP TRIGGER IF EXISTS tree_nodes_no_delete; DELETE FROM tree_nodes');
    const insert = db.prepare('INSERT INTO tree_nodes (level, idx, hash) VALUES (?, ?, ?)');
    const leaves = (db.prepare('SELECT hash FROM events ORDER BY seq').pluck().all() as string[]).map(eventLeaf);
    for (const n of extendTree(0, new Map(), leaves).nodes) insert.run(n.level, n.index, n.hash);
    for (const sql of triggers) db.exec(sql);
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

/** What the forged event at seq makes of pet 1's rows: its stock_adjustments row (a
 * QuantitySet's, from the quantity before it), then its inventory row. */
export function forgedProjectionSql(f: ForgedEvent, seq: bigint): string {
  const adjustment =
    (f.type ?? 'QuantitySet') === 'QuantitySet'
      ? `INSERT INTO stock_adjustments (seq, recorded_at, pet_id, previous_quantity, quantity, actor, request_id)
         SELECT ${seq}, '${f.recordedAt}', 1, quantity, ${f.quantity}, '${f.actor}', 'forged' FROM inventory WHERE pet_id = 1;\n`
      : '';
  const set =
    f.type === 'StatusSet'
      ? "status = 'pending'"
      : f.type === 'PetTracked'
        ? `quantity = ${f.quantity}, status = 'pending'`
        : `quantity = ${f.quantity}`;
  return `${adjustment}UPDATE inventory SET ${set}, version = ${f.version}, updated_at = '${f.recordedAt}' WHERE pet_id = 1`;
}

/** What a SigningKeyAdded written with SQL holds: no data at all, or an endorsement that
 * the new key signed for itself (a signature that verifies, by no other key of the log). */
export type ForgedEndorsement = 'none' | 'self-endorsed';

/**
 * Appends to the key log of db, with SQL past the guards, a SigningKeyAdded of `key`,
 * chained after the newest key event, its counter or head moved, as someone with the
 * database could write it.
 */
export async function forgeSigningKey(
  target: Pick<StoreTarget, 'name' | 'tamper'>,
  db: string,
  key: SigningKeyData,
  endorsement: ForgedEndorsement,
): Promise<void> {
  const on = { target, db };
  const [{ logId }] = (await query<{ logId: string }>(on, 'SELECT log_id AS "logId" FROM log_identity')) as [{ logId: string }];
  const [r] = (await query<Record<string, unknown>>(
    on,
    'SELECT seq, key_hash, prev_hash, hash FROM api_key_events ORDER BY seq DESC LIMIT 1',
  )) as [{ seq: bigint; prev_hash: string; hash: string }];
  const signer = makeSigner(key);
  const raw = Buffer.from(signer.publicKey, 'base64url');
  const recordedAt = new Date().toISOString();
  const text = endorsementText(logId, verifierKey(originOf(logId), raw), recordedAt);
  const data = endorsement === 'none' ? '' : endorsedData(signedNote(text, originOf(logId), raw, signer.sign(text)));
  const seq = Number(r.seq) + 1;
  const fields = { seq, type: 'SigningKeyAdded', name: signer.keyId, keyHash: signer.publicKey, recordedAt, actor: 'cli:ops' };
  const hash = keyEventHash({ prevHash: r.hash, ...fields, data });
  const sql = [
    `INSERT INTO api_key_events (seq, type, name, key_hash, recorded_at, actor, prev_hash, hash, data)
     VALUES (${seq}, 'SigningKeyAdded', '${signer.keyId}', '${signer.publicKey}', '${recordedAt}', 'cli:ops', '${r.hash}', '${hash}', '${data.replaceAll("'", "''")}')`,
    target.name === 'sqlite'
      ? `UPDATE sqlite_sequence SET seq = ${seq} WHERE name = 'api_key_events'`
      : `UPDATE key_chain_head SET seq = ${seq}, hash = '${hash}'`,
  ].join(';\n');
  await target.tamper.pastGuards(db, sql);
}
