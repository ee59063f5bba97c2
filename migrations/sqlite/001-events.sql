-- The event log: the source of truth and the audit trail. Append-only.
-- seq is AUTOINCREMENT so that a sequence number is never reused, even after the
-- newest row is gone (sqlite_sequence remembers the highest one ever handed out).
CREATE TABLE events (
  seq         INTEGER PRIMARY KEY AUTOINCREMENT,
  pet_id      INTEGER NOT NULL CHECK (pet_id > 0),
  version     INTEGER NOT NULL CHECK (version > 0),
  type        TEXT    NOT NULL CHECK (type IN ('PetTracked', 'QuantitySet', 'StatusSet')),
  data        TEXT    NOT NULL CHECK (json_valid(data)),
  actor       TEXT    NOT NULL,
  request_id  TEXT    NOT NULL,
  recorded_at TEXT    NOT NULL,
  UNIQUE (pet_id, version)
);

-- Whoever connects, history cannot be edited or removed through SQL.
CREATE TRIGGER events_no_update BEFORE UPDATE ON events
BEGIN
  SELECT RAISE(ABORT, 'events is append-only: UPDATE is not allowed');
END;

CREATE TRIGGER events_no_delete BEFORE DELETE ON events
BEGIN
  SELECT RAISE(ABORT, 'events is append-only: DELETE is not allowed');
END;

CREATE INDEX events_by_actor ON events (actor, recorded_at);
CREATE INDEX events_by_time ON events (recorded_at);
