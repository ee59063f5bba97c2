-- A log no one has to trust, as on SQLite (migrations/sqlite/010-signed-log.sql):
-- log_identity holds the log's id (logId), made with the database and kept by
-- copy-store; the key log also records each instance's signing key (SigningKeyAdded:
-- name is the key id, key_hash the raw public key in base64url); idempotency_keys gains
-- the Log-Receipt of each stored 200, which a replay sends again.
CREATE TABLE log_identity (
  id     boolean PRIMARY KEY DEFAULT true CHECK (id),
  log_id text    NOT NULL CHECK (log_id ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$')
);
INSERT INTO log_identity (log_id) VALUES (gen_random_uuid()::text);
-- Only an empty log may take another id: copy-store's target takes its source's.
CREATE FUNCTION log_identity_fixed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM events) OR EXISTS (SELECT 1 FROM api_key_events) THEN
    RAISE EXCEPTION 'log_identity is fixed once the log holds an event: UPDATE is not allowed';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER log_identity_no_update BEFORE UPDATE ON log_identity FOR EACH ROW EXECUTE FUNCTION log_identity_fixed();
CREATE TRIGGER log_identity_no_delete BEFORE DELETE ON log_identity FOR EACH ROW EXECUTE FUNCTION append_only();
CREATE TRIGGER log_identity_no_truncate BEFORE TRUNCATE ON log_identity FOR EACH STATEMENT EXECUTE FUNCTION append_only();

ALTER TABLE api_key_events DROP CONSTRAINT api_key_events_type_check;
ALTER TABLE api_key_events ADD CONSTRAINT api_key_events_type_check
  CHECK (type IN ('KeyCreated', 'KeyRevoked', 'SigningKeyAdded'));

ALTER TABLE idempotency_keys ADD COLUMN receipt text;
