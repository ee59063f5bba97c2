-- The log's Merkle tree (RFC 6962): the hash of every complete subtree of the events,
-- so that a root, an inclusion proof or a consistency proof is a handful of reads by key
-- and never reads the events. Level 0, index i is the leaf of the event with seq i + 1:
-- SHA-256(0x00 || the event's hash as 32 bytes); level L, index i hashes its two
-- children, SHA-256(0x01 || left || right), and covers the leaves [i * 2^L, (i + 1) * 2^L).
-- Written in the same transaction as its events, append-only like them. The migration
-- fills it for the events already in the log: the leaves here, each level above them from
-- the one below (src/store/sqlite/migrate.ts).
CREATE TABLE tree_nodes (
  level INTEGER NOT NULL CHECK (level BETWEEN 0 AND 62),
  idx   INTEGER NOT NULL CHECK (idx >= 0),
  hash  BLOB    NOT NULL CHECK (typeof(hash) = 'blob' AND length(hash) = 32),
  PRIMARY KEY (level, idx)
) WITHOUT ROWID;

CREATE TRIGGER tree_nodes_no_update BEFORE UPDATE ON tree_nodes
BEGIN
  SELECT RAISE(ABORT, 'tree_nodes is append-only: UPDATE is not allowed');
END;

CREATE TRIGGER tree_nodes_no_delete BEFORE DELETE ON tree_nodes
BEGIN
  SELECT RAISE(ABORT, 'tree_nodes is append-only: DELETE is not allowed');
END;

INSERT INTO tree_nodes (level, idx, hash) SELECT 0, seq - 1, merkle_leaf(hash) FROM events ORDER BY seq;
