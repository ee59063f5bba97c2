-- Key history is part of the audit trail. api_key_events is the keys' own log, with a
-- hash chain of its own (src/store/hash-chain.ts has the encoding): one KeyCreated per
-- key, one KeyRevoked per revocation. api_keys becomes append-only: no DELETE, and the
-- only change a row may get is its revocation, once, and only with its KeyRevoked event.
-- Existing keys are entered here, in the order they were created and revoked; their
-- chain is computed by key_event_hash(), which the migration runner registers.
CREATE TABLE api_key_events (
  seq         INTEGER PRIMARY KEY AUTOINCREMENT,
  type        TEXT NOT NULL CHECK (type IN ('KeyCreated', 'KeyRevoked')),
  name        TEXT NOT NULL,
  key_hash    TEXT NOT NULL,
  recorded_at TEXT NOT NULL,
  actor       TEXT NOT NULL,
  prev_hash   TEXT NOT NULL,
  hash        TEXT NOT NULL,
  UNIQUE (name, type)
);

INSERT INTO api_key_events (type, name, key_hash, recorded_at, actor, prev_hash, hash)
SELECT type, name, key_hash, recorded_at, actor, '', ''
FROM (
  SELECT 'KeyCreated' AS type, 0 AS rank, name, hash AS key_hash, created_at AS recorded_at, created_by AS actor FROM api_keys
  UNION ALL
  SELECT 'KeyRevoked', 1, name, hash, revoked_at, coalesce(revoked_by, '') FROM api_keys WHERE revoked_at IS NOT NULL
)
ORDER BY recorded_at, rank, name;

WITH RECURSIVE chain(seq, prev_hash, hash) AS (
  SELECT k.seq, printf('%.64c', '0'),
         key_event_hash(printf('%.64c', '0'), k.seq, k.type, k.name, k.key_hash, k.recorded_at, k.actor)
  FROM api_key_events k
  WHERE k.seq = 1
  UNION ALL
  SELECT k.seq, c.hash, key_event_hash(c.hash, k.seq, k.type, k.name, k.key_hash, k.recorded_at, k.actor)
  FROM chain c
  JOIN api_key_events k ON k.seq = c.seq + 1
)
UPDATE api_key_events SET prev_hash = chain.prev_hash, hash = chain.hash
FROM chain WHERE chain.seq = api_key_events.seq;

CREATE TRIGGER api_key_events_no_update BEFORE UPDATE ON api_key_events
BEGIN
  SELECT RAISE(ABORT, 'api_key_events is append-only: UPDATE is not allowed');
END;

CREATE TRIGGER api_key_events_no_delete BEFORE DELETE ON api_key_events
BEGIN
  SELECT RAISE(ABORT, 'api_key_events is append-only: DELETE is not allowed');
END;

CREATE TRIGGER api_keys_no_delete BEFORE DELETE ON api_keys
BEGIN
  SELECT RAISE(ABORT, 'api_keys is append-only: DELETE is not allowed');
END;

CREATE TRIGGER api_keys_revocation_only BEFORE UPDATE ON api_keys
WHEN OLD.revoked_at IS NOT NULL OR NEW.revoked_at IS NULL OR NEW.revoked_by IS NULL
  OR NEW.name IS NOT OLD.name OR NEW.hash IS NOT OLD.hash
  OR NEW.created_at IS NOT OLD.created_at OR NEW.created_by IS NOT OLD.created_by
BEGIN
  SELECT RAISE(ABORT, 'api_keys is append-only: the only change a key may get is its revocation, once');
END;

-- A key and its revocation exist only with their events in the key log's chain.
CREATE TRIGGER api_keys_created_chained BEFORE INSERT ON api_keys
WHEN NOT EXISTS (SELECT 1 FROM api_key_events k WHERE k.type = 'KeyCreated' AND k.name = NEW.name
                   AND k.key_hash = NEW.hash AND k.recorded_at = NEW.created_at AND k.actor = NEW.created_by)
  OR (NEW.revoked_at IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM api_key_events k WHERE k.type = 'KeyRevoked' AND k.name = NEW.name
                        AND k.recorded_at = NEW.revoked_at AND k.actor IS NEW.revoked_by))
BEGIN
  SELECT RAISE(ABORT, 'api_keys rows need their events in api_key_events (the key chain)');
END;

CREATE TRIGGER api_keys_revoked_chained BEFORE UPDATE ON api_keys
WHEN NOT EXISTS (SELECT 1 FROM api_key_events k WHERE k.type = 'KeyRevoked' AND k.name = NEW.name
                   AND k.recorded_at = NEW.revoked_at AND k.actor = NEW.revoked_by)
BEGIN
  SELECT RAISE(ABORT, 'api_keys rows need their events in api_key_events (the key chain)');
END;
