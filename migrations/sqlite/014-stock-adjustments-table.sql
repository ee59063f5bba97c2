-- stock_adjustments becomes a table with the same name and columns as the view it
-- replaces: one row per QuantitySet event, written in the same transaction as its event
-- with the quantity before it (the entry's row holds it when the event is decided), so
-- that auditors' questions read a few rows by index instead of recomputing every previous
-- quantity over the whole log. Append-only like events; verify-log compares it with the
-- events and rebuild-projection rebuilds it. delta is computed by the table, never written.
DROP VIEW stock_adjustments;

CREATE TABLE stock_adjustments (
  seq               INTEGER PRIMARY KEY CHECK (seq > 0),
  recorded_at       TEXT    NOT NULL,
  pet_id            INTEGER NOT NULL CHECK (pet_id > 0),
  previous_quantity INTEGER NOT NULL CHECK (previous_quantity >= 0),
  quantity          INTEGER NOT NULL CHECK (quantity >= 0),
  delta             INTEGER GENERATED ALWAYS AS (quantity - previous_quantity) STORED,
  actor             TEXT    NOT NULL,
  request_id        TEXT    NOT NULL
);

CREATE TRIGGER stock_adjustments_no_update BEFORE UPDATE ON stock_adjustments
BEGIN
  SELECT RAISE(ABORT, 'stock_adjustments is append-only: UPDATE is not allowed');
END;

CREATE TRIGGER stock_adjustments_no_delete BEFORE DELETE ON stock_adjustments
BEGIN
  SELECT RAISE(ABORT, 'stock_adjustments is append-only: DELETE is not allowed');
END;

-- The rows of the log so far: each QuantitySet with the quantity of the pet's latest
-- PetTracked or QuantitySet before it, found through events' (pet_id, version) index.
-- verify-log and rebuild-projection compute the rows with the same statement
-- (src/store/sqlite/adjustment-checks.ts).
INSERT INTO stock_adjustments (seq, recorded_at, pet_id, previous_quantity, quantity, actor, request_id)
SELECT e.seq, e.recorded_at, e.pet_id,
       (SELECT json_extract(p.data, '$.quantity') FROM events p
        WHERE p.pet_id = e.pet_id AND p.version < e.version AND p.type IN ('PetTracked', 'QuantitySet')
        ORDER BY p.version DESC LIMIT 1),
       json_extract(e.data, '$.quantity'), e.actor, e.request_id
FROM events e
WHERE e.type = 'QuantitySet'
ORDER BY e.seq;

-- One pet's history by seq; one pet as of an instant (its last row at or before it).
CREATE INDEX stock_adjustments_by_pet ON stock_adjustments (pet_id, seq);
CREATE INDEX stock_adjustments_by_pet_time ON stock_adjustments (pet_id, recorded_at);
-- A time window, and the net change per actor in one, from the index alone.
CREATE INDEX stock_adjustments_by_time ON stock_adjustments (recorded_at, actor, delta);
-- One actor's rows in a window; the rows of a key after its revocation.
CREATE INDEX stock_adjustments_by_actor ON stock_adjustments (actor, recorded_at);
