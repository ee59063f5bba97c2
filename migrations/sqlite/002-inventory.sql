-- The projection that backs GET /v1/inventory: one row per tracked pet, written in the
-- same transaction as the events that change it, and rebuildable from them.
CREATE TABLE inventory (
  pet_id     INTEGER PRIMARY KEY CHECK (pet_id > 0),
  quantity   INTEGER NOT NULL CHECK (quantity BETWEEN 0 AND 2147483647),
  status     TEXT    NOT NULL CHECK (status IN ('available', 'pending', 'sold')),
  version    INTEGER NOT NULL CHECK (version > 0),
  updated_at TEXT    NOT NULL
);
