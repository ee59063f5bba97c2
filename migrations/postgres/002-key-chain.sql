-- Key history is part of the audit trail, as on SQLite (migrations/sqlite/007-key-chain.sql):
-- api_key_events is the keys' own log with a hash chain of its own, one KeyCreated per
-- key and one KeyRevoked per revocation; key_chain_head is its head (the highest seq
-- ever handed out and the newest hash), locked by every key change. api_keys becomes
-- append-only for every role: no DELETE or TRUNCATE, and the only change a row may get
-- is its revocation, once, with its KeyRevoked event. Existing keys are entered in the
-- order they were created and revoked.
CREATE TABLE api_key_events (
  seq         bigint PRIMARY KEY CHECK (seq > 0),
  type        text   NOT NULL CHECK (type IN ('KeyCreated', 'KeyRevoked')),
  name        text   NOT NULL,
  key_hash    text   NOT NULL,
  recorded_at text   NOT NULL,
  actor       text   NOT NULL,
  prev_hash   text   NOT NULL CHECK (prev_hash ~ '^[0-9a-f]{64}$'),
  hash        text   NOT NULL CHECK (hash ~ '^[0-9a-f]{64}$'),
  UNIQUE (name, type)
);

CREATE TABLE key_chain_head (
  id   boolean PRIMARY KEY DEFAULT true CHECK (id),
  seq  bigint  NOT NULL CHECK (seq >= 0),
  hash text    NOT NULL
);

-- The key chain's encoding (src/store/hash-chain.ts): SHA-256 over the domain, a zero
-- byte, and each field as its UTF-8 byte length (4 bytes, big-endian) and its bytes.
CREATE FUNCTION key_event_hash(prev_hash text, seq bigint, type text, name text, key_hash text, recorded_at text, actor text)
RETURNS text LANGUAGE sql IMMUTABLE STRICT AS $$
  SELECT encode(sha256(convert_to('petstore-inventory/key/v1', 'UTF8') || '\x00'::bytea || string_agg(
           int4send(octet_length(convert_to(f, 'UTF8'))) || convert_to(f, 'UTF8'), ''::bytea ORDER BY i)), 'hex')
  FROM unnest(ARRAY[prev_hash, seq::text, type, name, key_hash, recorded_at, actor]) WITH ORDINALITY AS fields(f, i)
$$;

DO $$
DECLARE
  k record;
  n bigint := 0;
  prev text := repeat('0', 64);
  h text;
BEGIN
  FOR k IN
    SELECT * FROM (
      SELECT 'KeyCreated' AS type, 0 AS rank, name, hash AS key_hash, created_at AS recorded_at, created_by AS actor FROM api_keys
      UNION ALL
      SELECT 'KeyRevoked', 1, name, hash, revoked_at, coalesce(revoked_by, '') FROM api_keys WHERE revoked_at IS NOT NULL
    ) AS history
    ORDER BY recorded_at COLLATE "C", rank, name COLLATE "C"
  LOOP
    n := n + 1;
    h := key_event_hash(prev, n, k.type, k.name, k.key_hash, k.recorded_at, k.actor);
    INSERT INTO api_key_events VALUES (n, k.type, k.name, k.key_hash, k.recorded_at, k.actor, prev, h);
    prev := h;
  END LOOP;
  INSERT INTO key_chain_head (seq, hash) VALUES (n, prev);
END $$;

CREATE FUNCTION append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '% is append-only: % is not allowed', TG_TABLE_NAME, TG_OP;
END $$;
CREATE TRIGGER api_key_events_no_update BEFORE UPDATE ON api_key_events FOR EACH ROW EXECUTE FUNCTION append_only();
CREATE TRIGGER api_key_events_no_delete BEFORE DELETE ON api_key_events FOR EACH ROW EXECUTE FUNCTION append_only();
CREATE TRIGGER api_key_events_no_truncate BEFORE TRUNCATE ON api_key_events FOR EACH STATEMENT EXECUTE FUNCTION append_only();
CREATE TRIGGER api_keys_no_delete BEFORE DELETE ON api_keys FOR EACH ROW EXECUTE FUNCTION append_only();
CREATE TRIGGER api_keys_no_truncate BEFORE TRUNCATE ON api_keys FOR EACH STATEMENT EXECUTE FUNCTION append_only();

-- A key and its revocation exist only with their events in the key chain; a revocation
-- is the only change, once.
CREATE FUNCTION api_keys_chained() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' AND (OLD.revoked_at IS NOT NULL OR NEW.revoked_at IS NULL OR NEW.revoked_by IS NULL
      OR NEW.name IS DISTINCT FROM OLD.name OR NEW.hash IS DISTINCT FROM OLD.hash
      OR NEW.created_at IS DISTINCT FROM OLD.created_at OR NEW.created_by IS DISTINCT FROM OLD.created_by) THEN
    RAISE EXCEPTION 'api_keys is append-only: the only change a key may get is its revocation, once';
  END IF;
  IF (TG_OP = 'INSERT' AND NOT EXISTS (SELECT 1 FROM api_key_events k WHERE k.type = 'KeyCreated' AND k.name = NEW.name
        AND k.key_hash = NEW.hash AND k.recorded_at = NEW.created_at AND k.actor = NEW.created_by))
     OR (NEW.revoked_at IS NOT NULL AND NOT EXISTS (SELECT 1 FROM api_key_events k WHERE k.type = 'KeyRevoked'
        AND k.name = NEW.name AND k.recorded_at = NEW.revoked_at AND k.actor = NEW.revoked_by)) THEN
    RAISE EXCEPTION 'api_keys rows need their events in api_key_events (the key chain)';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER api_keys_chained BEFORE INSERT OR UPDATE ON api_keys FOR EACH ROW EXECUTE FUNCTION api_keys_chained();
