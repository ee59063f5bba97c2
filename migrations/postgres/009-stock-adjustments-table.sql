-- stock_adjustments becomes a table, as on SQLite
-- (migrations/sqlite/014-stock-adjustments-table.sql): the same name and columns as the
-- view it replaces, one row per QuantitySet event written in the same statement as its
-- event with the quantity before it, so that auditors' questions read a few rows by
-- index. Append-only like events; delta is computed by the table, never written.
-- The view's grants carry over to the table (an auditor's role keeps reading it), and
-- every role that may insert events may insert the rows that go with them.
CREATE TEMPORARY TABLE stock_adjustments_grants ON COMMIT DROP AS
SELECT a.privilege_type, a.is_grantable, CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(a.grantee)) END AS who
FROM pg_class c, aclexplode(c.relacl) a
WHERE c.oid = 'stock_adjustments'::regclass AND a.grantee <> c.relowner
UNION
SELECT 'INSERT', false, CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(a.grantee)) END
FROM pg_class c, aclexplode(c.relacl) a
WHERE c.oid = 'events'::regclass AND a.grantee <> c.relowner AND a.privilege_type = 'INSERT';

DROP VIEW stock_adjustments;

CREATE TABLE stock_adjustments (
  seq               bigint  PRIMARY KEY CHECK (seq > 0),
  recorded_at       text    NOT NULL,
  pet_id            bigint  NOT NULL CHECK (pet_id > 0),
  previous_quantity bigint  NOT NULL CHECK (previous_quantity >= 0),
  quantity          bigint  NOT NULL CHECK (quantity >= 0),
  delta             bigint  GENERATED ALWAYS AS (quantity - previous_quantity) STORED,
  actor             text    NOT NULL,
  request_id        text    NOT NULL
);

CREATE FUNCTION stock_adjustments_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'stock_adjustments is append-only: % is not allowed', TG_OP;
END $$;
CREATE TRIGGER stock_adjustments_no_update BEFORE UPDATE ON stock_adjustments FOR EACH ROW EXECUTE FUNCTION stock_adjustments_append_only();
CREATE TRIGGER stock_adjustments_no_delete BEFORE DELETE ON stock_adjustments FOR EACH ROW EXECUTE FUNCTION stock_adjustments_append_only();
CREATE TRIGGER stock_adjustments_no_truncate BEFORE TRUNCATE ON stock_adjustments FOR EACH STATEMENT EXECUTE FUNCTION stock_adjustments_append_only();

-- The rows of the log so far: each QuantitySet with the quantity of the pet's PetTracked
-- or QuantitySet before it, by version (verify-log and rebuild-projection compute them the
-- same way: src/store/postgres/adjustment-checks.ts).
INSERT INTO stock_adjustments (seq, recorded_at, pet_id, previous_quantity, quantity, actor, request_id)
SELECT seq, recorded_at, pet_id, previous_quantity, quantity, actor, request_id
FROM (
  SELECT seq, recorded_at, pet_id, type, actor, request_id,
         (data::jsonb ->> 'quantity')::bigint AS quantity,
         lag((data::jsonb ->> 'quantity')::bigint) OVER (PARTITION BY pet_id ORDER BY version) AS previous_quantity
  FROM events
  WHERE type IN ('PetTracked', 'QuantitySet')
) AS e
WHERE type = 'QuantitySet';

-- One pet's history by seq; one pet as of an instant (its last row at or before it).
CREATE INDEX stock_adjustments_by_pet ON stock_adjustments (pet_id, seq);
CREATE INDEX stock_adjustments_by_pet_time ON stock_adjustments (pet_id, recorded_at);
-- A time window, and the net change per actor in one, from the index alone.
CREATE INDEX stock_adjustments_by_time ON stock_adjustments (recorded_at, actor, delta);
-- One actor's rows in a window; the rows of a key after its revocation.
CREATE INDEX stock_adjustments_by_actor ON stock_adjustments (actor, recorded_at);
ANALYZE stock_adjustments;

DO $$
DECLARE
  g record;
BEGIN
  FOR g IN SELECT * FROM stock_adjustments_grants LOOP
    EXECUTE format('GRANT %s ON stock_adjustments TO %s%s', g.privilege_type, g.who, CASE WHEN g.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
  END LOOP;
END $$;
