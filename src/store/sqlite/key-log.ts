// The key log (api_key_events): every creation and revocation of a key, and every signing
// key added or retired, is entered here first with its link in the key chain.
import type { Db } from './database.ts';
import { GENESIS_HASH, keyEventHash, type KeyEventType } from '../hash-chain.ts';

/** Enters one event in the key log; runs inside its caller's transaction. */
export type LogKeyEvent = (type: KeyEventType, name: string, keyHash: string, at: string, actor: string, data?: string) => void;

export function makeKeyLog(db: Db): LogKeyEvent {
  // The next seq comes from the counter, not from the newest row: after a cut tail the
  // gap stays visible instead of being filled.
  const tip = db.prepare(
    `SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'api_key_events'), 0) AS seq,
            coalesce((SELECT hash FROM api_key_events ORDER BY seq DESC LIMIT 1), ?) AS hash`,
  );
  const insertEvent = db.prepare(
    'INSERT INTO api_key_events (seq, type, name, key_hash, recorded_at, actor, prev_hash, hash, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
  );
  return (type, name, keyHash, at, actor, data = '') => {
    const { seq: last, hash: prevHash } = tip.get(GENESIS_HASH) as { seq: number; hash: string };
    const seq = last + 1;
    insertEvent.run(
      seq,
      type,
      name,
      keyHash,
      at,
      actor,
      prevHash,
      keyEventHash({ prevHash, seq, type, name, keyHash, recordedAt: at, actor, data }),
      data,
    );
  };
}
