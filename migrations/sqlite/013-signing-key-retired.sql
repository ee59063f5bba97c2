-- Keys an auditor pins: a signing key can be retired (SigningKeyRetired: name is the key
-- id, key_hash its raw public key in base64url, as its SigningKeyAdded), and a key added
-- after the log's first carries in its SigningKeyAdded's data the endorsement signed by a
-- key already trusted, or says that it has none. SQLite cannot change a CHECK in place:
-- the key log is rebuilt with its rows, its counter and its triggers as they were.
DROP TRIGGER api_keys_created_chained;
DROP TRIGGER api_keys_revoked_chained;
DROP TRIGGER api_key_events_no_update;
DROP TRIGGER api_key_events_no_delete;
DROP TRIGGER log_identity_no_update;

CREATE TABLE api_key_events_retirable (
  seq         INTEGER PRIMARY KEY AUTOINCREMENT,
  type        TEXT NOT NULL CHECK (type IN ('KeyCreated', 'KeyRevoked', 'SigningKeyAdded', 'SigningKeyRetired')),
  name        TEXT NOT NULL,
  key_hash    TEXT NOT NULL,
  recorded_at TEXT NOT NULL,
  actor       TEXT NOT NULL,
  prev_hash   TEXT NOT NULL,
  hash        TEXT NOT NULL,
  data        TEXT NOT NULL DEFAULT '',
  UNIQUE (name, type)
);
INSERT INTO api_key_events_retirable (seq, type, name, key_hash, recorded_at, actor, prev_hash, hash, data)
SELECT seq, type, name, key_hash, recorded_at, actor, prev_hash, hash, data FROM api_key_events;
-- The counter as it was, also above the newest row (a cut tail stays visible).
INSERT INTO sqlite_sequence (name, seq)
SELECT 'api_key_events_retirable', seq FROM sqlite_sequence WHERE name = 'api_key_events'
  AND NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'api_key_events_retirable');
UPDATE sqlite_sequence SET seq = (SELECT seq FROM sqlite_sequence WHERE name = 'api_key_events')
WHERE name = 'api_key_events_retirable' AND EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'api_key_events');
DROP TABLE api_key_events;
ALTER TABLE api_key_events_retirable RENAME TO api_key_events;

CREATE TRIGGER api_key_events_no_update BEFORE UPDATE ON api_key_events
BEGIN
  SELECT RAISE(ABORT, 'api_key_events is append-only: UPDATE is not allowed');
END;

CREATE TRIGGER api_key_events_no_delete BEFORE DELETE ON api_key_events
BEGIN
  SELECT RAISE(ABORT, 'api_key_events is append-only: DELETE is not allowed');
END;

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

-- Only an empty log may take another id: copy-store's target takes its source's.
CREATE TRIGGER log_identity_no_update BEFORE UPDATE ON log_identity
WHEN EXISTS (SELECT 1 FROM events) OR EXISTS (SELECT 1 FROM api_key_events)
BEGIN
  SELECT RAISE(ABORT, 'log_identity is fixed once the log holds an event: UPDATE is not allowed');
END;
