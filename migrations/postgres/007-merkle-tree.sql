-- The log's Merkle tree (RFC 6962), as on SQLite (migrations/sqlite/012-merkle-tree.sql):
-- the hash of every complete subtree of the events, so that a root or a proof is a
-- handful of reads by key. Level 0, index i is the leaf of the event with seq i + 1:
-- SHA-256(0x00 || the event's hash as 32 bytes); level L, index i is
-- SHA-256(0x01 || left child || right child). Written in the same transaction as its
-- events, append-only like them; filled here for the events already in the log.
CREATE TABLE tree_nodes (
  level smallint NOT NULL CHECK (level BETWEEN 0 AND 62),
  idx   bigint   NOT NULL CHECK (idx >= 0),
  hash  bytea    NOT NULL CHECK (length(hash) = 32),
  PRIMARY KEY (level, idx)
);

CREATE FUNCTION tree_nodes_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'tree_nodes is append-only: % is not allowed', TG_OP;
END $$;
CREATE TRIGGER tree_nodes_no_update BEFORE UPDATE ON tree_nodes FOR EACH ROW EXECUTE FUNCTION tree_nodes_append_only();
CREATE TRIGGER tree_nodes_no_delete BEFORE DELETE ON tree_nodes FOR EACH ROW EXECUTE FUNCTION tree_nodes_append_only();
CREATE TRIGGER tree_nodes_no_truncate BEFORE TRUNCATE ON tree_nodes FOR EACH STATEMENT EXECUTE FUNCTION tree_nodes_append_only();

DO $$
DECLARE
  lvl smallint := 0;
  made bigint;
BEGIN
  INSERT INTO tree_nodes (level, idx, hash)
  SELECT 0, seq - 1, sha256('\x00'::bytea || decode(hash, 'hex')) FROM events;
  LOOP
    lvl := lvl + 1;
    INSERT INTO tree_nodes (level, idx, hash)
    SELECT lvl, l.idx / 2, sha256('\x01'::bytea || l.hash || r.hash)
    FROM tree_nodes l JOIN tree_nodes r ON r.level = lvl - 1 AND r.idx = l.idx + 1
    WHERE l.level = lvl - 1 AND l.idx % 2 = 0;
    GET DIAGNOSTICS made = ROW_COUNT;
    EXIT WHEN made = 0;
  END LOOP;
END $$;
