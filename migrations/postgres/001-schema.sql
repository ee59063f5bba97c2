-- The PostgreSQL schema: the same tables, columns and view as the SQLite one
-- (migrations/sqlite/), so that auditors' queries and the hash chain mean the same on
-- both stores. recorded_at and data are text: the hash chain covers their exact bytes.

-- The event log: the source of truth and the audit trail. Append-only.
CREATE TABLE events (
  seq         bigint  PRIMARY KEY CHECK (seq > 0),
  pet_id      bigint  NOT NULL CHECK (pet_id > 0),
  version     integer NOT NULL CHECK (version > 0),
  type        text    NOT NULL CHECK (type IN ('PetTracked', 'QuantitySet', 'StatusSet')),
  data        text    NOT NULL CHECK ((data::jsonb) IS NOT NULL),
  actor       text    NOT NULL,
  request_id  text    NOT NULL,
  recorded_at text    NOT NULL,
  prev_hash   text    NOT NULL CHECK (prev_hash ~ '^[0-9a-f]{64}$'),
  hash        text    NOT NULL CHECK (hash ~ '^[0-9a-f]{64}$'),
  UNIQUE (pet_id, version)
);
CREATE INDEX events_by_actor ON events (actor, recorded_at);
CREATE INDEX events_by_time ON events (recorded_at);

-- Whoever connects, history cannot be edited or removed through SQL: a trigger, unlike a
-- missing privilege, holds for the table's owner and for superusers too.
CREATE FUNCTION events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'events is append-only: % is not allowed', TG_OP;
END $$;
CREATE TRIGGER events_no_update BEFORE UPDATE ON events FOR EACH ROW EXECUTE FUNCTION events_append_only();
CREATE TRIGGER events_no_delete BEFORE DELETE ON events FOR EACH ROW EXECUTE FUNCTION events_append_only();
CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events FOR EACH STATEMENT EXECUTE FUNCTION events_append_only();

-- The chain's head, one row: the highest seq ever handed out and the newest event's
-- hash. Every appending transaction locks it first, so appends from any number of
-- service instances are serialized, each chained to the one before, and a seq is never
-- reused even if rows were removed behind the triggers. `changes` counts every commit
-- that may change what readers see (events, keys, a rebuilt projection): instances
-- compare it to know whether their cached list is current.
CREATE TABLE chain_head (
  id      boolean PRIMARY KEY DEFAULT true CHECK (id),
  seq     bigint  NOT NULL CHECK (seq >= 0),
  hash    text    NOT NULL,
  changes bigint  NOT NULL DEFAULT 0
);
INSERT INTO chain_head (seq, hash) VALUES (0, repeat('0', 64));

-- The projection behind GET /v1/inventory, written in the same transaction as the events.
CREATE TABLE inventory (
  pet_id     bigint  PRIMARY KEY CHECK (pet_id > 0),
  quantity   integer NOT NULL CHECK (quantity >= 0),
  status     text    NOT NULL CHECK (status IN ('available', 'pending', 'sold')),
  version    integer NOT NULL CHECK (version > 0),
  updated_at text    NOT NULL
);

-- API keys: SHA-256 hashes and names, never keys.
CREATE TABLE api_keys (
  name       text PRIMARY KEY,
  hash       text NOT NULL UNIQUE,
  created_at text NOT NULL,
  created_by text NOT NULL,
  revoked_at text,
  revoked_by text
);

-- One row per QuantitySet event, with the quantity before it (from the entry's earlier
-- PetTracked or QuantitySet events) and the difference.
CREATE VIEW stock_adjustments AS
SELECT seq, recorded_at, pet_id, previous_quantity, quantity,
       quantity - previous_quantity AS delta, actor, request_id
FROM (
  SELECT seq, recorded_at, pet_id, type, actor, request_id,
         (data::jsonb ->> 'quantity')::bigint AS quantity,
         lag((data::jsonb ->> 'quantity')::bigint) OVER (PARTITION BY pet_id ORDER BY version) AS previous_quantity
  FROM events
  WHERE type IN ('PetTracked', 'QuantitySet')
) AS e
WHERE type = 'QuantitySet';

-- Scratch space for the readiness probe: after a storage fault it checks whether writing
-- works again by writing a row here and rolling it back. It never holds data.
CREATE TABLE service_health (
  id      integer PRIMARY KEY,
  padding bytea
);
